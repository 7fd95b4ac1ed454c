#!/bin/sh
# types.sh OUTDIR: builds OUTDIR/msgq-types/BUILD-ID.so, the types Open
# MPI's message-queue library needs (ompi-types.c), from the development
# headers of the Open MPI that pkg-config finds, named by the build-id of
# that Open MPI's libmpi: sdm's servers use it for ranks that map that
# very libmpi (mpiq/dll.go). Without the headers, or with headers that do
# not compile (Debian 13's Open MPI 5 ships opal_config.h naming a
# threads header it does not ship), nothing is built and attached Open
# MPI jobs' queues are read only where libmpi has debugging information.
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
cmd="${CC:-cc} -g -shared -fPIC $(pkg-config --cflags ompi-c) -I$src/ompi-stub -o $out/msgq-types/$id.so $src/ompi-types.c"
echo "$cmd"
if ! err=$($cmd 2>&1); then
	echo "Open MPI's development headers do not compile here: no types for its message-queue library"
	echo "$err" | head -3
fi
exit 0
