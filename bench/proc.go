package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime/stime in /proc/<pid>/stat. Linux
// has used 100 on every architecture Go supports for decades.
const clockTicks = 100

// procCPU is one process's CPU time as /proc reports it.
type procCPU struct {
	// Self is utime+stime of the process itself.
	Self time.Duration
	// Children is cutime+cstime: CPU of children it has waited for
	// (PostgreSQL backends that ended).
	Children time.Duration
	PPid     int
	Comm     string
}

func readProcCPU(pid int) (procCPU, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procCPU{}, err
	}
	// comm may hold spaces and parentheses: split after the last ')'.
	end := bytes.LastIndexByte(b, ')')
	start := bytes.IndexByte(b, '(')
	if end < 0 || start < 0 || end+2 > len(b) {
		return procCPU{}, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[end+2:]))
	// f[0] is field 3 (state); utime is field 14 → f[11].
	if len(f) < 15 {
		return procCPU{}, fmt.Errorf("short /proc/%d/stat", pid)
	}
	num := func(i int) int64 { n, _ := strconv.ParseInt(f[i], 10, 64); return n }
	tick := func(n int64) time.Duration { return time.Duration(n) * time.Second / clockTicks }
	return procCPU{
		Self:     tick(num(11) + num(12)),
		Children: tick(num(13) + num(14)),
		PPid:     int(num(1)),
		Comm:     string(b[start+1 : end]),
	}, nil
}

// procMem is a process's resident memory now and at its peak (VmHWM).
type procMem struct {
	RSS  int64 // bytes
	Peak int64 // bytes
}

func readProcMem(pid int) (procMem, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procMem{}, err
	}
	defer f.Close()
	var m procMem
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		kb := func() int64 {
			fs := strings.Fields(line)
			if len(fs) < 2 {
				return 0
			}
			n, _ := strconv.ParseInt(fs[1], 10, 64)
			return n << 10
		}
		switch {
		case strings.HasPrefix(line, "VmRSS:"):
			m.RSS = kb()
		case strings.HasPrefix(line, "VmHWM:"):
			m.Peak = kb()
		}
	}
	return m, sc.Err()
}

// treeCPU sums the CPU of pid and all its live descendants, plus the
// children CPU pid has reaped (ended PostgreSQL backends).
func treeCPU(pid int) time.Duration {
	root, err := readProcCPU(pid)
	if err != nil {
		return 0
	}
	total := root.Self + root.Children
	for _, c := range descendants(pid) {
		if p, err := readProcCPU(c); err == nil {
			total += p.Self
		}
	}
	return total
}

// descendants lists the live descendants of pid.
func descendants(pid int) []int {
	parent := map[int]int{}
	entries, _ := filepath.Glob("/proc/[0-9]*")
	for _, e := range entries {
		n, err := strconv.Atoi(filepath.Base(e))
		if err != nil {
			continue
		}
		if p, err := readProcCPU(n); err == nil {
			parent[n] = p.PPid
		}
	}
	var out []int
	var walk func(int)
	walk = func(p int) {
		for c, pp := range parent {
			if pp == p {
				out = append(out, c)
				walk(c)
			}
		}
	}
	walk(pid)
	return out
}

// systemCPU returns the machine's busy and total CPU time so far
// (/proc/stat, all CPUs).
func systemCPU() (busy, total time.Duration) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, 0
	}
	var sum, idle int64
	for i, s := range f[1:] {
		n, _ := strconv.ParseInt(s, 10, 64)
		if i >= 8 { // guest time is already counted in user
			break
		}
		sum += n
		if i == 3 || i == 4 { // idle, iowait
			idle += n
		}
	}
	tick := func(n int64) time.Duration { return time.Duration(n) * time.Second / clockTicks }
	return tick(sum - idle), tick(sum)
}

// Machine describes where a run happened.
type Machine struct {
	CPUModel   string  `json:"cpuModel"`
	CPUs       int     `json:"cpus"`
	MemoryMiB  int64   `json:"memoryMiB"`
	Kernel     string  `json:"kernel"`
	GoVersion  string  `json:"goVersion"`
	Hostname   string  `json:"hostname"`
	LoadBefore float64 `json:"loadAvg1Before"`
}

func describeMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	m.Hostname, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "MemTotal:") {
				f := strings.Fields(l)
				if len(f) >= 2 {
					kb, _ := strconv.ParseInt(f[1], 10, 64)
					m.MemoryMiB = kb >> 10
				}
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	m.LoadBefore = loadAvg1()
	return m
}

func loadAvg1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
