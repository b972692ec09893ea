#!/usr/bin/env bash
# Builds Prism's OCI image without pulling a base image: mmdebstrap makes a Debian 13 (trixie)
# root file system from Debian's packages (nodejs 20 and its libraries, nothing else), the
# built project is copied in, and umoci packs the result as an OCI image layout; skopeo writes
# a docker-archive tarball of it as well. Needs root (mmdebstrap's root mode), the project
# built (`npm ci`), and the packages mmdebstrap, umoci, skopeo (Debian's).
#
# usage: deploy/image/build.sh OUT_DIR
#   OUT_DIR/oci               the OCI image layout (tag 0.1.0)
#   OUT_DIR/prism-0.1.0.tar   the same image as a docker-archive (prism:0.1.0)
#   OUT_DIR/image-report.json sizes and the package versions inside
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: deploy/image/build.sh OUT_DIR}
version=$(node -p "require('$root/package.json').version")
suite=trixie
mirror=http://deb.debian.org/debian
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for tool in mmdebstrap umoci skopeo; do
  command -v "$tool" >/dev/null || { echo "build.sh: needs $tool (apt-get install $tool)" >&2; exit 1; }
done
[ -f "$root/build/Release/prism_native.node" ] && [ -f "$root/dist/cli/main.js" ] ||
  { echo "build.sh: build the project first (npm ci)" >&2; exit 1; }

# 1. The root file system: Debian's essential set plus nodejs (Node 20) and CA certificates;
#    no documentation, manual pages or locales; apt's lists dropped.
mmdebstrap --variant=essential --include=nodejs,ca-certificates \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
  "$suite" "$work/rootfs" "$mirror"

# 2. The project: compiled JavaScript, the native addons, the proto files, production
#    dependencies only (dev ones pruned, other platforms' prebuilt binaries dropped) and the
#    default model.
app="$work/rootfs/opt/prism"
mkdir -p "$app/build/Release" "$app/models"
cp -a "$root/package.json" "$root/package-lock.json" "$root/dist" "$root/proto" "$app/"
cp -a "$root"/build/Release/*.node "$app/build/Release/"
cp -a "$root/node_modules" "$app/"
(cd "$app" && npm prune --omit=dev --ignore-scripts --offline --no-audit --no-fund >/dev/null)
find "$app/node_modules/zeromq/build" -mindepth 1 -maxdepth 1 ! -name linux -exec rm -rf {} +
find "$app/node_modules/zeromq/build/linux" -mindepth 1 -maxdepth 1 ! -name x64 -exec rm -rf {} +
find "$app/node_modules/zeromq/build/linux/x64/node" -mindepth 1 -maxdepth 1 ! -name 'glibc-115-Release' -exec rm -rf {} +
rm -f "$app/package-lock.json"
cp -L "$root/models/SmolLM2-135M-Instruct.Q4_1.gguf" "$app/models/"
cat > "$work/rootfs/usr/local/bin/prism" <<'SH'
#!/bin/sh
exec /usr/bin/node /opt/prism/dist/cli/main.js "$@"
SH
chmod 755 "$work/rootfs/usr/local/bin/prism"
echo 'prism:x:65532:65532:prism:/nonexistent:/usr/sbin/nologin' >> "$work/rootfs/etc/passwd"
echo 'prism:x:65532:' >> "$work/rootfs/etc/group"
node_version=$(chroot "$work/rootfs" /usr/bin/node --version)

# 3. Pack: an empty image, its root file system replaced by ours, then the runtime config.
rm -rf "$out/oci"
umoci init --layout "$out/oci"
umoci new --image "$out/oci:$version"
umoci unpack --image "$out/oci:$version" "$work/bundle" >/dev/null
rm -rf "$work/bundle/rootfs"
mv "$work/rootfs" "$work/bundle/rootfs"
umoci repack --image "$out/oci:$version" "$work/bundle"
umoci config --image "$out/oci:$version" \
  --config.entrypoint=/usr/local/bin/prism --config.cmd=serve \
  --config.user=65532:65532 --config.workingdir=/opt/prism \
  --config.env=NODE_ENV=production --config.env=PRISM_MODELS_DIR=/opt/prism/models \
  --config.exposedports=8000/tcp --config.exposedports=8001/tcp --config.exposedports=8002/tcp \
  --author='Prism' --config.label=org.opencontainers.image.title=prism \
  --config.label=org.opencontainers.image.version="$version"
umoci gc --layout "$out/oci"
rm -f "$out/prism-$version.tar"
skopeo copy --quiet "oci:$out/oci:$version" "docker-archive:$out/prism-$version.tar:prism:$version"

layers=$(jq -r '.layers[].size' < "$out/oci/blobs/sha256/$(jq -r '.manifests[0].digest' < "$out/oci/index.json" | cut -d: -f2)" | paste -sd+ | bc)
unpacked=$(du -sb "$work/bundle/rootfs" | cut -f1)
cat > "$out/image-report.json" <<JSON
{"image": "prism:$version", "suite": "$suite", "node": "$node_version",
 "compressedLayerBytes": $layers, "unpackedBytes": $unpacked,
 "archiveBytes": $(stat -c %s "$out/prism-$version.tar")}
JSON
cat "$out/image-report.json"
