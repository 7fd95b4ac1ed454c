#!/bin/sh
# types.sh OUTDIR: builds OUTDIR/msgq-types/BUILD-ID.so, the types Open
# MPI's message-queue library needs (ompi-types.c), from the development
# headers of the Open MPI that pkg-config finds, named by the build-id of
# that Open MPI's libmpi: sdm's servers use it for ranks that map that
# very libmpi (mpiq/dll.go). Debian 13's Open MPI 5 package ships
# opal_config.h naming threads headers it does not ship: OMPI_SOURCE, the
# top of the same Open MPI's source tree (apt-get source openmpi), gives
# them. Without the headers, or with headers that do not compile, nothing
# is built and attached Open MPI jobs' queues are read only where libmpi
# has debugging information.
set -u
out=${1%/}
src=$(dirname "$0")
if ! pkg-config --exists ompi-c 2>/dev/null; then
	echo "no Open MPI headers (ompi-c.pc): no types for Open MPI's message-queue library"
	exit 0
fi
lib=$(readlink -f "$(pkg-config --variable=libdir ompi-c)/libmpi.so")
id=$(readelf -n "$lib" 2>/dev/null | sed -n 's/.*Build ID: *//p' | head -1)
if [ -z "$id" ]; then
	echo "$lib has no build-id: no types for Open MPI's message-queue library"
	exit 0
fi
mkdir -p "$out/msgq-types"
# Open MPI 5's headers include OpenPMIx's.
flags="$(pkg-config --cflags ompi-c) $(pkg-config --cflags pmix 2>/dev/null || true) -I$src/ompi-stub"
[ -z "${OMPI_SOURCE:-}" ] || flags="$flags -I$OMPI_SOURCE"
cmd="${CC:-cc} -g -shared -fPIC $flags -o $out/msgq-types/$id.so $src/ompi-types.c"
echo "$cmd"
if ! err=$($cmd 2>&1); then
	echo "Open MPI's development headers do not compile here: no types for its message-queue library"
	echo "$err" | grep -m1 'error' || echo "$err" | head -3
	case $err in
	*"No such file"*) [ -n "${OMPI_SOURCE:-}" ] || echo "(OMPI_SOURCE, the same Open MPI's source tree, may give the headers the package lacks)" ;;
	esac
fi
exit 0
