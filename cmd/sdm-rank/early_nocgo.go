//go:build !cgo

package main

// early says that no start in C joined: without cgo there is none.
func early() (fd int, ok bool) { return -1, false }
