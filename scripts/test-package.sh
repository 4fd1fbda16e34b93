#!/usr/bin/env bash
# The Debian package as a user gets it: built by cpack from a build directory, installed by apt
# into a fresh Debian 12 root made with debootstrap (apt resolves its dependencies from the
# archive), and used there by an ordinary user: data get, prepare, train of a tiny config,
# sample. Needs root (debootstrap, chroot) and the Debian archive the host's apt uses.
#   scripts/test-package.sh [build directory]     (default: build/release)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
if [ "$(id -u)" -ne 0 ]; then
  echo "test-package: needs root for debootstrap and chroot" >&2
  exit 1
fi
command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
(cd "$build" && rm -f lmforge_*.deb && cpack -G DEB >/dev/null 2>&1)
deb=$(ls "$build"/lmforge_*_amd64.deb)
# The archive this host's apt reads (deb822 or one-line sources), else Debian's own.
mirror=$(grep -hoE '^URIs: *[^ ]+/debian$|^deb +[^ ]+/debian ' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list \
         2>/dev/null | head -1 | awk '{print $2}' || true)
mirror=${mirror:-http://deb.debian.org/debian}

work=$(mktemp -d /tmp/lmforge-package.XXXXXX)
root="$work/root"
cleanup() {
  umount "$root/proc" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
echo "test-package: debootstrap bookworm from $mirror"
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
  { tail -20 "$work/debootstrap.log"; exit 1; }
mount -t proc proc "$root/proc"
# The host's network as the root's: its name servers, and the certificate authorities it
# trusts beyond Debian's own (a site's TLS proxy), which update-ca-certificates adds there too.
cp /etc/resolv.conf "$root/etc/resolv.conf"
mkdir -p "$root/usr/local/share/ca-certificates"
cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
cp "$deb" "$root/tmp/"
echo "test-package: apt install ./$(basename "$deb")"
chroot "$root" /bin/sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq /tmp/$(basename "$deb")" \
  >"$work/apt.log" 2>&1 || { tail -20 "$work/apt.log"; exit 1; }
chroot "$root" useradd --create-home user
cat >"$root/home/user/tiny.toml" <<'EOF'
[model]
preset = "gpt2-nano"
n_layer = 2
n_head = 2
n_embd = 32
block_size = 64
[data]
dir = "data/moby-dick"
[train]
batch_size = 4
seq_len = 64
max_steps = 20
[optim]
warmup_steps = 5
[eval]
every = 10
batches = 2
[sample]
count = 0
EOF
chroot "$root" chown user /home/user/tiny.toml
run() { chroot "$root" su - user -c "$1"; }
run "lmforge --version"
run "lmforge data get moby-dick gpt2-tokenizer"
run "lmforge prepare --input ~/.cache/lmforge/moby-dick --output data/moby-dick"
run "lmforge train tiny.toml"
sample=$(run "lmforge sample --checkpoint runs/tiny/best --prompt 'Call me' --max-new-tokens 8 --seed 1")
echo "$sample"
case "$sample" in
  "Call me"*) echo "test-package: passed: installed by apt into a fresh Debian root, it fetched, prepared, trained and sampled" ;;
  *) echo "test-package: the sample does not continue the prompt" >&2; exit 1 ;;
esac
