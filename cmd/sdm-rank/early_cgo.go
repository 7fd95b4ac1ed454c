//go:build cgo

package main

/*
#cgo CFLAGS: -O2 -Wall
#include <stdlib.h>
#include "early.h"
*/
import "C"

import (
	"time"
	"unsafe"
)

// early returns the connection to its leader over which the start in C
// (early.c) joined, if it did.
func early() (fd int, ok bool) {
	return int(C.sdm_early_fd), C.sdm_early_fd >= 0
}

// earlyDecide is the start in C's decision on args and env: the plan of
// a member, or false when it leaves the start to Go.
func earlyDecide(args, env []string) (plan, bool) {
	strs := func(list []string) **C.char {
		p := C.malloc(C.size_t(len(list)+1) * C.size_t(unsafe.Sizeof((*C.char)(nil))))
		a := unsafe.Slice((**C.char)(p), len(list)+1)
		for i, s := range list {
			a[i] = C.CString(s)
		}
		a[len(list)] = nil
		return (**C.char)(p)
	}
	free := func(p **C.char, n int) {
		for _, s := range unsafe.Slice(p, n) {
			C.free(unsafe.Pointer(s))
		}
		C.free(unsafe.Pointer(p))
	}
	argv, envp := strs(append([]string{"sdm-rank"}, args...)), strs(env)
	defer free(argv, len(args)+1)
	defer free(envp, len(env))
	var c C.struct_sdm_plan
	if C.sdm_early_decide(C.int(len(args)+1), argv, envp, &c) == 0 {
		return plan{}, false
	}
	return plan{
		index: int(c.index), leader: int(c.leader), servers: int(c.servers),
		keyFile: C.GoString(c.key_file), sim: c.sim != 0,
		timeout: time.Duration(c.timeout_ms) * time.Millisecond, listener: int(c.listener),
	}, true
}

// earlyAddress is the start in C's name of the socket of server leader
// of the session whose key is key, as member.Address names it.
func earlyAddress(key [32]byte, leader int) string {
	var out [108]C.char
	C.sdm_early_address((*C.uchar)(unsafe.Pointer(&key[0])), C.int(leader), &out[0], C.size_t(len(out)))
	return "@" + C.GoString(&out[0])
}
