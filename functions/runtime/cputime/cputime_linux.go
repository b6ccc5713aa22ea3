package cputime

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// clockTick is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on
// every Linux architecture Go runs on.
const clockTick = 10 * time.Millisecond

// Tree is the CPU time (user and system) used so far by this process, by
// its children that still run or are not yet reaped (/proc), and by those
// reaped (RUSAGE_CHILDREN): a worker burning CPU counts whichever state it
// is in, and the sum never goes down. A child reaped while it is read
// would count in neither: the children are listed again after, and the
// reading taken again when they changed.
func Tree() (time.Duration, bool) {
	for range 100 {
		live, cpu, ok := children()
		var self, reaped syscall.Rusage
		if !ok || syscall.Getrusage(syscall.RUSAGE_SELF, &self) != nil || syscall.Getrusage(syscall.RUSAGE_CHILDREN, &reaped) != nil {
			return 0, false
		}
		if again, _, ok := children(); ok && again == live {
			return rusage(self) + rusage(reaped) + cpu, true
		}
	}
	return 0, false
}

// children lists this process's children in /proc (their pids, as one
// string to compare) with the CPU time they have used.
func children() (pids string, cpu time.Duration, ok bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return "", 0, false
	}
	me := os.Getpid()
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if ppid, c, ok := stat(e.Name()); ok && ppid == me {
			pids += e.Name() + " "
			cpu += c
		}
	}
	return pids, cpu, true
}

func rusage(r syscall.Rusage) time.Duration {
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

// stat reads a process's parent and CPU time from /proc/<pid>/stat.
func stat(pid string) (ppid int, cpu time.Duration, ok bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// The command name, in parentheses, may hold spaces: fields are
	// counted after its closing one (state is field 3, ppid 4, utime 14,
	// stime 15).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 13 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	ut, err2 := strconv.ParseInt(string(f[11]), 10, 64)
	st, err3 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, false
	}
	return ppid, time.Duration(ut+st) * clockTick, true
}
