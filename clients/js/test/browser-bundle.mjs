// The package bundled as a browser or an edge runtime gets it (esbuild, platform "browser"): it must build with no
// Node built-in pulled in. Used by test/unit/bundle.test.mjs and by test/e2e.mjs, which talks to the stack over
// WebSocket through this bundle rather than through the Node package.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";

export async function browserBundle() {
  const outfile = join(await mkdtemp(join(tmpdir(), "mnemo-client-")), "mnemo-client.browser.mjs");
  const result = await build({
    entryPoints: [new URL("../src/index.js", import.meta.url).pathname],
    bundle: true,
    platform: "browser",
    format: "esm",
    outfile,
    metafile: true,
    logLevel: "silent",
  });
  const inputs = Object.keys(result.metafile.inputs);
  return { outfile, inputs };
}
