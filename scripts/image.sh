#!/usr/bin/env bash
# The sojourn image, built and run with no container registry (docs/distributed.md, "The image
# without a registry").
#
#   scripts/image.sh build [--tag TAG] [BINARY]
#   scripts/image.sh run [PODMAN-RUN-OPTION…] IMAGE [ARG…]
#
# build: a root filesystem holding only the `sojourn` binary, the shared libraries it loads (as
# ldd lists them), /bin/sh and rm for the merge Job's script (deploy/kubernetes/merge-job.yaml),
# the CA roots, and a passwd/group entry for the non-root user 10001. It is packed with tar and
# imported with `podman import`, which sets what the Containerfile sets: USER, WORKDIR,
# ENTRYPOINT ["sojourn"], CMD. BINARY (or $SOJOURN_BIN) is the binary to put in it, stripped;
# without one, the script builds `cargo build --release --locked -p sojourn-cli --bin sojourn`.
# TAG (or $SOJOURN_IMAGE) defaults to localhost/sojourn:VERSION. The programs and libraries come
# from this machine, so build BINARY on this machine's distribution (or an older glibc).
#
# run: `podman run --rm` with the flags this kind of machine needs (a cgroup v1/v2 hybrid and no
# CAP_SYS_RESOURCE, as root): the cgroupfs manager and runc (crun refuses the hybrid), rlimits
# that need no raising (podman's defaults are above what this machine allows), and the host's
# network (no bridge or slirp to set up).
set -euo pipefail
# Paths given on the command line stay relative to where the script was called from.
repo=$(cd "$(dirname "$0")/.." && pwd)

die() {
  echo "scripts/image.sh: $*" >&2
  exit 2
}

# The non-root user the Containerfile and deploy/kubernetes/*.yaml run as.
readonly USER_ID=10001

usage() {
  sed -n '5,6s/^#  *//p' "$0" >&2
  exit 2
}

# The release binary, built if it is missing or stale; its path on stdout.
release_binary() {
  (cd "$repo" && cargo build --release --locked -p sojourn-cli --bin sojourn \
    --message-format=json-render-diagnostics) |
    sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1
}

# Copies PROGRAM into ROOT at DEST, and every shared library it loads at the same path as here.
install_program() {
  local root=$1 program=$2 dest=$3 libs
  install -D -m 0755 "$(readlink -f "$program")" "$root$dest"
  if ! libs=$(ldd "$program" 2>&1); then
    # A static binary: ldd says so and fails; it needs no library.
    grep -qE 'not a dynamic executable|statically linked' <<<"$libs" || die "ldd $program: $libs"
    return
  fi
  if grep -q 'not found' <<<"$libs"; then
    die "$program needs libraries this machine lacks (build it here, or on an older glibc): $(grep 'not found' <<<"$libs" | tr -s ' \t' ' ')"
  fi
  # "libc.so.6 => /lib/…/libc.so.6 (0x…)" and the loader, "/lib64/ld-linux-x86-64.so.2 (0x…)";
  # linux-vdso is the kernel's, with no file.
  sed -n -e 's/.*=> \(\/[^ ]*\) (0x.*/\1/p' -e 's/^[[:space:]]*\(\/[^ ]*\) (0x.*/\1/p' <<<"$libs" |
    while read -r lib; do
      # With its own mode: the loader must be executable.
      [ -e "$root$lib" ] || install -D -m "$(stat -L -c %a "$lib")" "$(readlink -f "$lib")" "$root$lib"
    done
}

# /etc of the image: the two users, name lookups from files then DNS, the CA roots.
write_etc() {
  local root=$1
  mkdir -p "$root/etc/ssl/certs"
  printf 'root:x:0:0:root:/root:/bin/sh\nsojourn:x:%d:%d:sojourn:/home/sojourn:/bin/sh\n' \
    "$USER_ID" "$USER_ID" >"$root/etc/passwd"
  printf 'root:x:0:\nsojourn:x:%d:\n' "$USER_ID" >"$root/etc/group"
  printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$root/etc/nsswitch.conf"
  # sojourn trusts the Mozilla roots compiled into it; the bundle is for --cacert, as in the
  # Containerfile's image (a private CA is added in an image built from this one).
  local bundle=/etc/ssl/certs/ca-certificates.crt
  [ -f "$bundle" ] || die "no CA roots at $bundle: install ca-certificates"
  install -m 0644 "$bundle" "$root$bundle"
}

# ROOT packed as the image's one layer: owned by root, but for the user's home and /results.
pack() {
  local root=$1 tar=$2
  local common=(--numeric-owner --sort=name --mtime=@0 -C "$root")
  tar -cf "$tar" "${common[@]}" --owner=0 --group=0 \
    --exclude=./home/sojourn --exclude=./results .
  tar -rf "$tar" "${common[@]}" --owner="$USER_ID" --group="$USER_ID" --no-recursion \
    ./home/sojourn ./results
}

build() {
  local tag=${SOJOURN_IMAGE:-} binary=${SOJOURN_BIN:-}
  while [ $# -gt 0 ]; do
    case $1 in
      --tag) [ $# -ge 2 ] || die "--tag needs a value: --tag localhost/sojourn:dev"; tag=$2; shift 2 ;;
      -*) die "build: unknown option $1 (--tag TAG, then the binary)" ;;
      *) binary=$1; shift ;;
    esac
  done
  if [ -z "$tag" ]; then
    tag="localhost/sojourn:$(sed -n 's/^version = "\(.*\)"/\1/p' "$repo/Cargo.toml" | head -n 1)"
  fi
  [ -n "$binary" ] || binary=$(release_binary)
  [ -x "$binary" ] || die "$binary: no executable there (the binary to put in the image)"
  command -v podman >/dev/null || die "podman is not installed (apt-get install podman runc)"

  local scratch
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/sojourn-image.XXXXXX")
  # shellcheck disable=SC2064 # the path is fixed now
  trap "rm -rf '$scratch'" EXIT
  local root=$scratch/root
  mkdir -p "$root"/{home/sojourn,results,tmp}
  chmod 1777 "$root/tmp"
  install_program "$root" "$binary" /usr/local/bin/sojourn
  strip "$root/usr/local/bin/sojourn"
  install_program "$root" /bin/sh /bin/sh
  install_program "$root" "$(command -v rm)" /bin/rm
  write_etc "$root"
  pack "$root" "$scratch/rootfs.tar"

  podman import --quiet \
    --change "ENV PATH=/usr/local/bin:/usr/bin:/bin" \
    --change "USER $USER_ID:$USER_ID" \
    --change "WORKDIR /home/sojourn" \
    --change 'ENTRYPOINT ["sojourn"]' \
    --change 'CMD ["--help"]' \
    --message "sojourn from $binary" \
    "$scratch/rootfs.tar" "$tag" >/dev/null
  echo "built $tag ($(podman image inspect --format '{{.Size}}' "$tag") bytes)" >&2
  echo "$tag"
}

run() {
  [ $# -ge 1 ] || usage
  # nofile: one descriptor per connection, up to this shell's hard limit (podman's default is
  # above it, and raising a hard limit needs CAP_SYS_RESOURCE). nproc: sojourn runs a few dozen
  # threads; podman lowers its own limit (to 32768 here), so the shell's may be refused.
  local files
  files=$(ulimit -Hn)
  exec podman --cgroup-manager=cgroupfs run --rm --runtime runc \
    --ulimit "nofile=$files:$files" --ulimit nproc=1000:1000 \
    --network host "$@"
}

case ${1:-} in
  build) shift; build "$@" ;;
  run) shift; run "$@" ;;
  *) usage ;;
esac
