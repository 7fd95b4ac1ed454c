#!/usr/bin/env bash
# MPI programs that nobody in this project wrote, for the integration tests:
# fetched from Debian's source packages and built with -g -O0 for Open MPI
# and for MPICH, with each MPI's own compiler wrappers.
#
#   scripts/thirdparty.sh [DIR]     # fetch what is missing, build what is stale
#
# DIR (default: $SDM_THIRDPARTY, else ${XDG_CACHE_HOME:-~/.cache}/sdm/thirdparty)
# keeps the downloads in DIR/src, so that a second run needs no network, and
# the programs in DIR/openmpi and DIR/mpich:
#
#   from openmpi's examples/: ring_c connectivity_c hello_c (C), ring_cxx (C++,
#       where the MPI still has its C++ bindings: Open MPI 5 has none),
#       ring_mpifh (Fortran 77, mpif.h), ring_usempi (use mpi), ring_usempif08
#       (use mpi_f08)
#   from mpich's test/mpi/:   isendirecv (MPI_Waitall), opminloc (arrays of
#       structs, MPI_Reduce), uallreducef90 (Fortran arrays, MPI_Allreduce with
#       a user operation)
#   from hpcc:                hpcc-1.5.0/hpcc and a small hpcc-1.5.0/hpccinf.txt
#       (HPL on a 2x2 grid: run it with 4 ranks where that file is)
#
# Each package's sources are the newest that apt's deb-src entries offer and
# the archive serves: on Debian 12 Open MPI 4.1.4, MPICH 4.0.2 and HPCC 1.5.0;
# on Debian 13 Open MPI 5.0.7 and HPCC 1.5.0, and MPICH 4.0.2 where Debian
# 13's MPICH sources do not download (.ci/run lists Debian 12's sources
# too). The sources stay beside the programs (DIR/openmpi-VERSION,
# DIR/mpich-VERSION, and DIR/MPI/hpcc-1.5.0, built in place): the programs'
# debug information names them, so that stops show their files and lines
# and gdb can list them. Open MPI 5's threads headers are unpacked beside its
# examples (DIR/openmpi-VERSION/opal/mca/threads), for a build of sdm given
# OMPI_SOURCE=DIR/openmpi-VERSION (docs/HANGS.md; .ci/run does so).
#
# Debian's source archive needs a deb-src entry in apt's sources (.ci/run adds
# them). A package that does not download is reported on standard error as
# "missing PACKAGE: why"; the others are still built. Exit status: 0 when
# everything is there, 3 when some package could not be downloaded, 1 on any
# other failure. Needs: apt-get, tar, xz, gcc, g++, gfortran, the compiler
# wrappers of both MPIs (libopenmpi-dev, libmpich-dev), and BLAS (libblas-dev)
# for HPCC.
set -euo pipefail
DIR=${1:-${SDM_THIRDPARTY:-${XDG_CACHE_HOME:-$HOME/.cache}/sdm/thirdparty}}
mkdir -p "$DIR/src"
DIR=$(cd "$DIR" && pwd)
exec 9>"$DIR/.lock"
flock 9 # one run at a time: test binaries may ask at once

# What a user debugging their program builds with.
CFLAGS="-g -O0"
# The script's own text marks a build: a changed script rebuilds.
stamp=$(sha256sum "$0" | cut -d' ' -f1)

missing=0
declare -A ORIG TOP
# fetch PACKAGE: download the newest of PACKAGE's source versions whose
# upstream tarball the archive serves into DIR/src, unless that tarball is
# there already, and set ORIG[PACKAGE] to the tarball and TOP[PACKAGE] to
# its top directory. hpcc's Debian tarball is missing from the archive
# (apt-get exits 100 although the .orig downloaded), so success is the
# tarball being there, not apt-get's status. Where apt offers no version
# (no deb-src entry, no network), a tarball downloaded before will do.
fetch() {
  local pkg=$1 log why version versions upstream orig
  log=$(mktemp)
  # apt downloads as _apt where it can; a directory it owns spares its
  # warning about downloading unsandboxed as root.
  if [ "$(id -u)" = 0 ] && id _apt >/dev/null 2>&1; then
    chown _apt "$DIR/src" 2>/dev/null || true
  fi
  versions=$(apt-cache showsrc "$pkg" 2>/dev/null | awk '/^Version:/ {print $2}' | sort -rV -u || true)
  for version in $versions; do
    upstream=${version#*:}
    upstream=${upstream%-*}
    orig=$(tarball "${pkg}_$upstream")
    if [ -z "$orig" ]; then
      (cd "$DIR/src" && timeout 600 apt-get source --download-only "$pkg=$version") >>"$log" 2>&1 || true
      orig=$(tarball "${pkg}_$upstream")
    fi
    [ -n "$orig" ] && break
  done
  if [ -z "$versions" ]; then
    orig=$(tarball "${pkg}_")
    if [ -z "$orig" ]; then
      (cd "$DIR/src" && timeout 600 apt-get source --download-only "$pkg") >>"$log" 2>&1 || true
      orig=$(tarball "${pkg}_")
    fi
  fi
  if [ -n "$orig" ]; then
    ORIG[$pkg]=$orig
    TOP[$pkg]=$( (tar -tf "$DIR/src/$orig" || true) | head -1 | cut -d/ -f1)
    rm -f "$log"
    return 0
  fi
  why=$(grep -E '^(E|W):' "$log" | head -3 | tr '\n' ' ' || true)
  case "$why" in
  *deb-src*) why="$why(add one for the machine's release, as .ci/run does)" ;;
  "") why=$(tail -3 "$log" | tr '\n' ' ') ;;
  esac
  echo "missing $pkg: apt-get source --download-only $pkg gave no upstream tarball: $why" >&2
  missing=1
  rm -f "$log"
  return 1
}

# tarball PREFIX: the newest upstream tarball in DIR/src whose name starts
# with PREFIX and that is not empty, or nothing.
tarball() {
  (cd "$DIR/src" && ls "$1"*.orig.tar.* 2>/dev/null | sort -V | while read -r f; do [ -s "$f" ] && echo "$f"; done | tail -1) || true
}

# wrapper MPI LANG: MPI's compiler wrapper for LANG (c, cxx or f).
wrapper() {
  case $1:$2 in
  openmpi:c) echo mpicc.openmpi ;;
  openmpi:cxx) echo mpicxx.openmpi ;;
  openmpi:f) echo mpifort.openmpi ;;
  mpich:c) echo mpicc.mpich ;;
  mpich:cxx) echo mpicxx.mpich ;;
  mpich:f) echo mpifort.mpich ;;
  esac
}

# fresh MPI PART: whether PART was built for MPI by this very script.
fresh() { [ "$(cat "$DIR/$1/.$2" 2>/dev/null)" = "$stamp" ]; }
built() { echo "$stamp" >"$DIR/$1/.$2"; }

# unpack TARBALL TOP MEMBERS...: unpack MEMBERS of DIR/src/TARBALL into DIR,
# whose directory TOP is made afresh.
unpack() {
  local tarball=$1 top=$2
  shift 2
  rm -rf "${DIR:?}/$top"
  tar -xf "$DIR/src/$tarball" -C "$DIR" "$@"
}

build_openmpi_examples() {
  local mpi=$1 top=${TOP[openmpi]} ex=$DIR/${TOP[openmpi]}/examples
  fresh "$mpi" "openmpi-examples-$top" && return 0
  if [ ! -f "$ex/.unpacked-$stamp" ]; then
    # With the examples, Open MPI 5's threads headers, which its
    # development package lacks and the types of its message-queue
    # library need (OMPI_SOURCE of mpiq/lib/types.sh). Open MPI 4.1 has
    # no such directory, and tar says so.
    unpack "${ORIG[openmpi]}" "$top" --wildcards "$top/examples/*" "$top/opal/mca/threads/*" 2>/dev/null || [ -d "$ex" ]
    touch "$ex/.unpacked-$stamp"
  fi
  cd "$ex"
  for p in ring_c connectivity_c hello_c; do
    "$(wrapper "$mpi" c)" $CFLAGS -o "$DIR/$mpi/$p" "$p.c"
  done
  # The MPI C++ bindings are gone from Open MPI 5, and its examples with
  # them: ring_cxx is built only where the sources have it and the MPI
  # has them, and said absent elsewhere.
  rm -f "$DIR/$mpi/ring_cxx"
  if [ -f ring_cxx.cc ] && printf '#include <mpi.h>\nint main(void) { MPI::Init(); }\n' |
    "$(wrapper "$mpi" cxx)" -fsyntax-only -x c++ - 2>/dev/null; then
    "$(wrapper "$mpi" cxx)" $CFLAGS -o "$DIR/$mpi/ring_cxx" ring_cxx.cc
  fi
  for f in ring_mpifh.f ring_usempi.f90 ring_usempif08.f90; do
    "$(wrapper "$mpi" f)" $CFLAGS -o "$DIR/$mpi/${f%.*}" "$f"
  done
  built "$mpi" "openmpi-examples-$top"
}

build_mpich_tests() {
  local mpi=$1 top=${TOP[mpich]} t=$DIR/${TOP[mpich]}/test/mpi
  fresh "$mpi" "mpich-tests-$top" && return 0
  if [ ! -f "$t/.unpacked-$stamp" ]; then
    unpack "${ORIG[mpich]}" "$top" \
      "$top/test/mpi/include" "$top/test/mpi/util" \
      "$top/test/mpi/pt2pt/isendirecv.c" "$top/test/mpi/coll/opminloc.c" \
      "$top/test/mpi/f90/coll/uallreducef90.f90"
    # The test suite's configure writes mpitestconf.h; these few tests
    # need only what any Linux has.
    cat >"$t/include/mpitestconf.h" <<'EOF'
#ifndef MPITESTCONF_H_INCLUDED
#define MPITESTCONF_H_INCLUDED
#define HAVE_STDARG_H 1
#define HAVE_STDLIB_H 1
#define HAVE_STRING_H 1
#define HAVE_UNISTD_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_GETRUSAGE 1
#define HAVE_MPI_WIN_CREATE 1
#define HAVE_MPI_INIT_THREAD 1
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_POSIX
#endif
EOF
    touch "$t/.unpacked-$stamp"
  fi
  local util="../util/mtest.c ../util/mtest_common.c ../util/mtest_single.c"
  # -w: the suite's own code warns under gcc 12; its warnings are not ours.
  cd "$t/pt2pt"
  "$(wrapper "$mpi" c)" $CFLAGS -w -I../include -o "$DIR/$mpi/isendirecv" isendirecv.c $util
  cd "$t/coll"
  "$(wrapper "$mpi" c)" $CFLAGS -w -I../include -o "$DIR/$mpi/opminloc" opminloc.c $util
  # The module files of the two MPIs' builds differ: a directory for each.
  mkdir -p "$t/f90/coll/$mpi"
  cd "$t/f90/coll"
  "$(wrapper "$mpi" f)" $CFLAGS -J "$mpi" -o "$DIR/$mpi/uallreducef90" ../../util/mtest_f90.f90 uallreducef90.f90
  built "$mpi" "mpich-tests-$top"
}

build_hpcc() {
  local mpi=$1 src=$DIR/$1/hpcc-1.5.0
  fresh "$mpi" hpcc && return 0
  rm -rf "$src"
  mkdir -p "$src"
  tar -xf "$DIR/src/${ORIG[hpcc]}" -C "$src" --strip-components=1
  # HPL calls two MPI-1 functions that MPI-3 removed (Open MPI 4 refuses
  # them at compile time); their MPI-2 names take the same arguments.
  sed -i 's/MPI_Address(/MPI_Get_address(/; s/MPI_Type_struct(/MPI_Type_create_struct(/' "$src/hpl/src/comm/HPL_packL.c"
  cat >"$src/hpl/Make.sdm" <<EOF
SHELL        = /bin/sh
CD           = cd
CP           = cp
LN_S         = ln -s
MKDIR        = mkdir -p
RM           = /bin/rm -f
TOUCH        = touch
ARCH         = \$(arch)
TOPdir       = ../../..
INCdir       = \$(TOPdir)/include
BINdir       = \$(TOPdir)/bin/\$(ARCH)
LIBdir       = \$(TOPdir)/lib/\$(ARCH)
HPLlib       = \$(LIBdir)/libhpl.a
F2CDEFS      = -DAdd_ -DF77_INTEGER=int -DStringSunStyle
HPL_INCLUDES = -I\$(INCdir) -I\$(INCdir)/\$(ARCH)
HPL_LIBS     = \$(HPLlib) -lblas -lm
HPL_DEFS     = \$(F2CDEFS) \$(HPL_INCLUDES)
CC           = $(wrapper "$mpi" c)
CCNOOPT      = \$(HPL_DEFS) $CFLAGS
CCFLAGS      = \$(HPL_DEFS) $CFLAGS -w
LINKER       = $(wrapper "$mpi" c)
LINKFLAGS    = $CFLAGS
ARCHIVER     = ar
ARFLAGS      = r
RANLIB       = echo
EOF
  make -s -C "$src" arch=sdm -j"$(nproc)" >"$src/build.log" 2>&1 || {
    tail -20 "$src/build.log" >&2
    return 1
  }
  # A problem small enough for a debugging session: HPL's N=200 on a 2x2
  # process grid (4 ranks), the other benchmarks' defaults.
  sed 's/^1000         Ns/200          Ns/; s/^80           NBs/20           NBs/' \
    "$src/_hpccinf.txt" >"$src/hpccinf.txt"
  built "$mpi" hpcc
}

have=()
fetch openmpi && have+=(openmpi)
fetch mpich && have+=(mpich)
fetch hpcc && have+=(hpcc)

for mpi in openmpi mpich; do
  mkdir -p "$DIR/$mpi"
  for pkg in "${have[@]}"; do
    case $pkg in
    openmpi) (build_openmpi_examples "$mpi") ;;
    mpich) (build_mpich_tests "$mpi") ;;
    hpcc) (build_hpcc "$mpi") ;;
    esac
  done
done
echo "$DIR"
if [ $missing = 1 ]; then exit 3; fi
