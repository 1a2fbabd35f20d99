"""The HTTP gateway's section of the settings tree (``MNEMO_GATEWAY__<KEY>``), read once at start."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

SECTION = "gateway"


class GatewaySettings(BaseModel):
    """Section ``gateway``: ``MNEMO_GATEWAY__PORT``, ``MNEMO_GATEWAY__API_KEYS``, ..."""

    model_config = ConfigDict(frozen=True)

    host: str = Field("127.0.0.1", description="address the HTTP gateway listens on")
    port: int = Field(8080, ge=0, le=65535, description="its port (0: any free port, printed at start)")
    api_keys: dict[str, str] = Field(
        default_factory=dict,
        description='API keys in clear, key -> tenant it acts for, e.g. MNEMO_GATEWAY__API_KEYS=\'{"k1": "t1"}\' '
        '(`"t1 engine"`: with the memory API\'s engine right, `"t1 operator"`: the operator views\'; development; in '
        "production prefer api_keys_file)",
    )
    api_keys_file: Path | None = Field(
        None,
        description="a file of hashed keys, one `sha256:<hex of the key's SHA-256> <tenant> [engine] [operator]` a "
        "line (`#` comments; `engine`: the memory API's engine right; `operator`: the operator views, docs/workbench.md); "
        "`mnemo gateway new-key TENANT [--engine] [--operator]` prints one",
    )
    request_timeout_s: float = Field(
        30.0, gt=0, description="how long a request waits for the service's reply (then 504)"
    )
    publish_timeout_s: float = Field(10.0, gt=0, description="how long a chat event waits for JetStream's ack")
    rate_per_s: float = Field(
        0.0, ge=0, description="requests a second each API key may send (0: no limit); past it 429 with Retry-After"
    )
    burst: int = Field(50, ge=1, description="requests a key may send at once before rate_per_s applies")
    workbench_dir: Path | None = Field(
        None,
        description="the built workbench served at /workbench/ (default: the checkout's workbench/dist, which "
        "`make install` builds)",
    )
