import assert from "node:assert/strict";
import { test } from "node:test";
import { browserBundle } from "../browser-bundle.mjs";

test("the client bundles for the browser without Node built-ins or the TCP transport", async () => {
  const { outfile, inputs } = await browserBundle();
  assert.ok(inputs.some((path) => path.endsWith("src/client.js")));
  assert.ok(!inputs.some((path) => path.includes("transport-node") || path.startsWith("node:")), inputs.join("\n"));
  const bundled = await import(outfile);
  assert.equal(typeof bundled.MnemoClient.connectWs, "function");
});
