#!/usr/bin/env bash
# A Debian 13 ("trixie") root beside a Debian 12 machine, for the tests of
# what Debian 13 changed: Open MPI 5 (PRRTE, PMIx, no MPIR), MPICH 4.2,
# SLURM 24.11, gdb 16, glibc 2.41. Made once with debootstrap and kept
# (rebuilt when its package list changes); the project's tree, the Go
# toolchain and its module cache are bind-mounted into it for each run.
#
#   scripts/trixie.sh up              # make or refresh the root
#   scripts/trixie.sh run CMD...      # run CMD in the project's tree in it
#   scripts/trixie.sh test            # the MPI tests there (what .ci/run runs)
#
# On a Debian 13 machine there is nothing to do: test says so and exits 0,
# since the whole suite runs on the machine itself.
#
# Environment: SDM_TRIXIE_ROOT (/var/cache/sdm/trixie), SDM_TRIXIE_MIRROR
# (the machine's Debian mirror, else deb.debian.org). Runs as root; needs
# debootstrap, and util-linux's unshare: every mount of a run lives in a
# mount namespace of its own, so that none outlives the run, however it
# ends.
set -euo pipefail
ROOT=${SDM_TRIXIE_ROOT:-/var/cache/sdm/trixie}
HERE=$(cd "$(dirname "$0")/.." && pwd)
# What the tests use there: the build (gcc, the static C library, OpenPMIx
# and pkg-config for sdm-pmix), the examples (C++, Fortran), both MPIs,
# SLURM and munge, gdb, the C library's symbols and eu-stack.
PACKAGES="gdb make gcc libc6-dev pkg-config libpmix-dev g++ gfortran openmpi-bin libopenmpi-dev
mpich libmpich-dev slurm-wlm munge elfutils libc6-dbg procps ca-certificates"
# The tests of the Debian 13 set: launch under mpirun, mpiexec and srun
# (and restart there), a fault caught launched and attached, attach and
# stacks through PMIx, --mpir through --stop-on-exec, the ranks' labelled
# output, SLURM jobs by id, and the editors' adapter.
TESTS='TestAdaptersEndToEnd|TestRestartUnderLaunchers|TestFaultCaughtUnderLaunchers|TestFaultCaughtAttached|TestMPIROpenMPI|TestStacksCommandOnOpenMPI|TestMPIROutputHasRanks|TestRestartRefusedAfterAttach|TestAttachSlurmJob|TestAttachSlurmJobRefusals|TestDAPSessionOpenMPI|TestDAPAttachPause|TestDAPLaunchMPIR|TestDAPAttachSlurmJob'

fail() { echo "trixie: $*" >&2; exit 1; }

native() { grep -qs '^VERSION_CODENAME=trixie' /etc/os-release; }

mirror() {
  local m
  m=${SDM_TRIXIE_MIRROR:-$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)}
  echo "${m:-http://deb.debian.org/debian}"
}

# stamp names what the root was made with: a new package list remakes it.
stamp() { echo "$PACKAGES" | sha256sum | cut -c1-16; }

up() {
  [ "$(id -u)" = 0 ] || fail "run as root"
  if native; then
    echo "trixie: this machine is Debian 13: no root is needed"
    return 0
  fi
  if [ -f "$ROOT/.sdm-stamp" ] && [ "$(cat "$ROOT/.sdm-stamp")" = "$(stamp)" ]; then
    return 0
  fi
  command -v debootstrap >/dev/null || fail "debootstrap is not installed (apt-get install debootstrap)"
  echo "trixie: making the Debian 13 root in $ROOT (once; a few minutes)"
  rm -rf "$ROOT.tmp"
  mkdir -p "$(dirname "$ROOT")"
  debootstrap --variant=minbase trixie "$ROOT.tmp" "$(mirror)" >"$ROOT.log" 2>&1 ||
    fail "debootstrap failed: see $ROOT.log"
  cat >"$ROOT.tmp/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $(mirror)
Suites: trixie trixie-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
  rm -f "$ROOT.tmp/etc/apt/sources.list"
  # shellcheck disable=SC2086 # the list is words, on one line
  in_root "$ROOT.tmp" "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(echo $PACKAGES)" \
    >>"$ROOT.log" 2>&1 || fail "installing the packages failed: see $ROOT.log"
  stamp >"$ROOT.tmp/.sdm-stamp"
  rm -rf "$ROOT"
  mv "$ROOT.tmp" "$ROOT"
}

# in_root ROOT SCRIPT runs SCRIPT with bash in ROOT, with this machine's
# DNS and CA bundle, the system's mounts, the project's tree at /src/sdm
# and Go at its own path, all in a mount namespace of its own.
in_root() {
  local root=$1 script=$2 goroot="" modcache=""
  if command -v go >/dev/null; then
    goroot=$(go env GOROOT)
    modcache=$(go env GOMODCACHE)
  fi
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  mkdir -p "$root/etc/ssl/certs" "$root/src/sdm" "$root/root/.cache"
  # The CA bundle that this machine trusts (a proxy's CA too), for Go's
  # module downloads; Debian's own until ca-certificates is installed.
  local bundle=${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}
  [ -s "$bundle" ] && cp "$bundle" "$root/etc/ssl/certs/sdm-host.crt"
  [ -z "$goroot" ] || mkdir -p "$root$goroot" "$root$modcache"
  unshare --mount --propagation private -- bash -euc '
    root=$1 here=$2 goroot=$3 modcache=$4 script=$5
    mount -t proc proc "$root/proc"
    mount --rbind /sys "$root/sys"
    mount --rbind /dev "$root/dev"
    mount -t tmpfs tmpfs "$root/run"
    mount -t tmpfs tmpfs "$root/tmp"
    mount --bind "$here" "$root/src/sdm"
    if [ -n "$goroot" ]; then
      mount --bind "$goroot" "$root$goroot"
      mount --bind "$modcache" "$root$modcache"
    fi
    exec chroot "$root" /usr/bin/env -i PATH="${goroot:+$goroot/bin:}/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
      HOME=/root CI="${CI:-}" GOFLAGS="-buildvcs=false" GOMODCACHE="$modcache" GOPROXY="${GOPROXY:-}" GOTOOLCHAIN=local \
      SSL_CERT_FILE="$(test -s "$root/etc/ssl/certs/sdm-host.crt" && echo /etc/ssl/certs/sdm-host.crt)" \
      bash -c "cd /src/sdm && $script"
  ' trixie "$root" "$HERE" "$goroot" "$modcache" "$script"
}

case "${1:-}" in
  up) up ;;
  run)
    shift
    [ $# -gt 0 ] || fail "run needs a command"
    native && fail "this machine is Debian 13: run the command here"
    up
    in_root "$ROOT" "$*"
    ;;
  test)
    if native; then
      echo "trixie: this machine is Debian 13: the whole suite runs on it"
      exit 0
    fi
    up
    echo "trixie: the MPI tests in the Debian 13 root ($ROOT)"
    in_root "$ROOT" "go test -count=1 -timeout 25m -run '^($TESTS)\$' ./integration/"
    ;;
  *) echo "usage: scripts/trixie.sh up | run CMD... | test" >&2; exit 2 ;;
esac
