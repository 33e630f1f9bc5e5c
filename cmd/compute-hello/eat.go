package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// eatMiB is how much memory eatMemory has taken, for its test.
var eatMiB int

// eatMemory takes mib MiB of memory, writing to every page so the kernel
// charges it to the container, says so on w and holds it until SIGINT or
// SIGTERM. Under a lower memory limit the kernel kills it on the way.
func eatMemory(mib int, w io.Writer) {
	held := make([][]byte, 0, mib)
	for i := 0; i < mib; i++ {
		b := make([]byte, 1<<20)
		for j := 0; j < len(b); j += 4096 {
			b[j] = 1
		}
		held = append(held, b)
		eatMiB = len(held)
	}
	_, _ = fmt.Fprintf(w, "compute-hello holds %d MiB (-eat)\n", len(held))
	if eatHold != nil {
		eatHold()
	}
}

// eatHold waits for the end: SIGINT or SIGTERM; nil returns at once (the
// tests').
var eatHold = func() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	<-ch
}
