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
# debootstrap, and util-linux's unshare and mountpoint.
set -euo pipefail
ROOT=${SDM_TRIXIE_ROOT:-/var/cache/sdm/trixie}
HERE=$(cd "$(dirname "$0")/.." && pwd)
# What the tests use there: the build (gcc, the static C library, OpenPMIx
# and pkg-config for sdm-pmix), the examples (C++, Fortran), both MPIs,
# SLURM and munge, gdb, the C library's symbols and eu-stack, and for the
# emulated cluster of scripts/cluster.sh sshd, ssh and iproute2.
PACKAGES="gdb make gcc libc6-dev pkg-config libpmix-dev g++ gfortran openmpi-bin libopenmpi-dev
mpich libmpich-dev slurm-wlm munge elfutils libc6-dbg procps ca-certificates
openssh-server openssh-client iproute2 xz-utils"
# The tests of the Debian 13 set: launch under mpirun, mpiexec and srun
# (and restart there), a fault caught launched and attached, attach and
# stacks through PMIx, --mpir through --stop-on-exec, the ranks' labelled
# output, SLURM jobs by id, the editors' adapter, and across the emulated
# cluster's hosts: a launch, stacks through PMIx, a SLURM job by id; and
# ranks sharing gdb 16 (SHARED, in the gdb backend and through the tree);
# the MPI queues kept by the library sdm preloads (package mpiq, queues
# and deadlock) and read through Open MPI's own library; sdm report's crash, hang and tracepoints, and the gdb
# backend's tracepoints.
# They run with the default gdbs of 16 ranks and with a gdb per rank.
#
# Open MPI 5's libopenmpi-dev lacks threads headers its opal_config.h
# names, which the types of its message-queue library need (mpiq/lib/
# types.sh): the headers come from the same Open MPI's source package,
# downloaded once into the root (OMPI_SRC) and given to the build as
# OMPI_SOURCE.
OMPI_SRC=/var/cache/sdm/openmpi-source
TESTS='TestAcrossHosts|TestStacksAcrossHosts|TestAttachSlurmJobAcrossHosts|TestAdaptersEndToEnd|TestRestartUnderLaunchers|TestFaultCaughtUnderLaunchers|TestFaultCaughtAttached|TestMPIROpenMPI|TestStacksCommandOnOpenMPI|TestMPIROutputHasRanks|TestRestartRefusedAfterAttach|TestAttachSlurmJob|TestAttachSlurmJobRefusals|TestDAPSessionOpenMPI|TestDAPAttachPause|TestDAPLaunchMPIR|TestDAPAttachSlurmJob|TestSharedGDBsUnderLocalLauncher|TestQueuesAndDeadlock|TestQueuesMergeInTheTree|TestQueuesThroughTheMPIsLibrary|TestReportCrash|TestReportHang|TestReportTracepoints'
SHARED='TestSharedGDB|TestTracepoint|TestWhereWhilePassingATracepoint'

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
Types: deb deb-src
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
# DNS and CA bundle, kernel file systems, the project's tree at /src/sdm
# and Go at its own path: the tree and Go read-only, /dev a tmpfs with the
# few devices the tests use, so that no mount of a run, should one outlive
# it, exposes this machine's files to a removal of the root. The mounts
# live in a mount namespace of their own where the machine's root is a
# mount (not in a chroot, whose / is none: there they are undone when the
# run ends).
# ompi_source downloads the source of the root's Open MPI into OMPI_SRC
# once (its version kept beside it) and unpacks the headers it needs.
ompi_source() {
  in_root "$ROOT" 'v=$(dpkg-query -W -f="\${Version}" libopenmpi-dev) &&
    { [ "$(cat '"$OMPI_SRC"'/.version 2>/dev/null)" = "$v" ] ||
      { rm -rf '"$OMPI_SRC"' && mkdir -p '"$OMPI_SRC"' && cd '"$OMPI_SRC"' &&
        apt-get update -qq && apt-get source --download-only -qq "openmpi=$v" >/dev/null 2>&1 &&
        tar -xJf openmpi_*.orig.tar.xz --wildcards "*/opal/mca/threads/*" && rm -f openmpi_* && echo "$v" >.version; }; }' ||
    echo "trixie: Open MPI's source did not download: attached Open MPI jobs' queues are not read there" >&2
}

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
  [ -z "$goroot" ] || mkdir -p "$modcache" "$root$goroot" "$root$modcache"
  if mountpoint -q /; then
    unshare --mount --propagation private -- "$0" __enter "$root" "$goroot" "$modcache" "$script"
  else
    "$0" __enter "$root" "$goroot" "$modcache" "$script"
  fi
}

# enter mounts what a run needs in ROOT, undoes it at its end, and runs
# SCRIPT there.
enter() {
  local root=$1 goroot=$2 modcache=$3 script=$4
  # mounts is global: the EXIT trap runs after the function has ended.
  mounts=()
  on() { mount "$@"; mounts=("${!#}" "${mounts[@]}"); }
  undo() { for m in "${mounts[@]}"; do umount -l "$m" 2>/dev/null || true; done; }
  trap undo EXIT
  on -t proc proc "$root/proc"
  on -t sysfs sysfs "$root/sys"
  on -t tmpfs -o mode=0755 tmpfs "$root/dev"
  for d in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9 tty:5:0; do
    IFS=: read -r name major minor <<<"$d"
    mknod -m 0666 "$root/dev/$name" c "$major" "$minor"
  done
  mkdir -p "$root/dev/pts" "$root/dev/shm"
  on -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$root/dev/pts"
  ln -s pts/ptmx "$root/dev/ptmx"
  ln -s /proc/self/fd "$root/dev/fd"
  ln -s /proc/self/fd/0 "$root/dev/stdin"
  ln -s /proc/self/fd/1 "$root/dev/stdout"
  ln -s /proc/self/fd/2 "$root/dev/stderr"
  on -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
  on -t tmpfs tmpfs "$root/run"
  on -t tmpfs -o mode=1777 tmpfs "$root/tmp"
  on --bind -o ro "$HERE" "$root/src/sdm"
  if [ -n "$goroot" ]; then
    on --bind -o ro "$goroot" "$root$goroot"
    on --bind -o ro "$modcache" "$root$modcache"
  fi
  local cert=""
  [ -s "$root/etc/ssl/certs/sdm-host.crt" ] && cert=/etc/ssl/certs/sdm-host.crt
  chroot "$root" /usr/bin/env -i PATH="${goroot:+$goroot/bin:}/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    HOME=/root CI="${CI:-}" GOFLAGS=-buildvcs=false GOMODCACHE="$modcache" GOPROXY="${GOPROXY:-}" GOTOOLCHAIN=local \
    SSL_CERT_FILE="$cert" TERM="${TERM:-dumb}" bash -c "cd /src/sdm && $script"
}

case "${1:-}" in
  __enter) shift; enter "$@" ;;
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
    ompi_source
    in_root "$ROOT" "export OMPI_SOURCE=\$(echo $OMPI_SRC/openmpi-*) && go test -count=1 -timeout 5m -run '^$SHARED' ./backend/gdbmi/ &&
      go test -count=1 -timeout 5m ./mpiq/ &&
      go test -count=1 -timeout 25m -run '^($TESTS)\$' ./integration/ &&
      SDM_RANKS_PER_GDB=1 go test -count=1 -timeout 25m -run '^($TESTS)\$' ./integration/"
    ;;
  *) echo "usage: scripts/trixie.sh up | run CMD... | test" >&2; exit 2 ;;
esac
