package main

import "os"

// terminate asks a process to stop; Windows has no SIGTERM.
var terminate = os.Interrupt
