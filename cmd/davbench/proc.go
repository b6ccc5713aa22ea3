//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// memStat is one process's resident memory in KiB.
type memStat struct {
	RSS, HWM int64
}

// readMem reads VmRSS and VmHWM of pid.
func readMem(pid int) (memStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memStat{}, fmt.Errorf("read status of pid %d: %w", pid, err)
	}
	var m memStat
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "VmRSS:"):
			m.RSS = kib(line)
		case strings.HasPrefix(line, "VmHWM:"):
			m.HWM = kib(line)
		}
	}
	return m, nil
}

func kib(line string) int64 {
	f := strings.Fields(line)
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.ParseInt(f[1], 10, 64)
	return n
}

// withChildren returns pid and its direct children. Apache's memory is the
// parent's plus that of its worker processes (mpm_event forks them).
func withChildren(pid int) []int {
	pids := []int{pid}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/stat")
		if err != nil {
			continue
		}
		// Field 4 (ppid) follows the parenthesised command, which may hold
		// spaces: parse after the last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == pid {
			if c, err := strconv.Atoi(filepath.Base(d)); err == nil {
				pids = append(pids, c)
			}
		}
	}
	return pids
}

// snapshot reads the memory of every pid; vanished processes are skipped.
func snapshot(pids []int) map[int]memStat {
	out := make(map[int]memStat, len(pids))
	for _, p := range pids {
		if m, err := readMem(p); err == nil {
			out[p] = m
		}
	}
	return out
}

// cpuTime is the user + system CPU time of pids in seconds (clock ticks of
// 1/100 s, the Linux USER_HZ).
func cpuTime(pids []int) float64 {
	var ticks int64
	for _, p := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		// After the command: state(3) ppid(4) ... utime(14) stime(15).
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + s
	}
	return float64(ticks) / 100
}

// selfCPU is this process's (the load generator's) CPU time in seconds.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func totalRSS(s map[int]memStat) int64 {
	var t int64
	for _, m := range s {
		t += m.RSS
	}
	return t
}

// machineFacts describes the machine for the results.
func machineFacts() (cpus int, model string, memTotal string, kernel string) {
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "processor") {
				cpus++
			}
			if model == "" && strings.HasPrefix(line, "model name") {
				if i := strings.IndexByte(line, ':'); i >= 0 {
					model = strings.TrimSpace(line[i+1:])
				}
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "MemTotal:") {
				memTotal = fmt.Sprintf("%.1f GiB", float64(kib(line))/(1<<20))
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = strings.TrimSpace(string(b))
	}
	return cpus, model, memTotal, kernel
}

// machineBusy returns the CPU time, in seconds since boot over all CPUs,
// spent in processes (user, nice, system) and outside them (irq, softirq,
// where loopback TCP is mostly processed, and steal), from /proc/stat.
func machineBusy() (procs, kernel float64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0
	}
	var n [8]int64
	for i := range n {
		n[i], _ = strconv.ParseInt(f[1+i], 10, 64)
	}
	// Fields: user nice system idle iowait irq softirq steal.
	return float64(n[0]+n[1]+n[2]) / 100, float64(n[5]+n[6]+n[7]) / 100
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
