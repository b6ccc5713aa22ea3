//go:build linux

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

type runConfig struct {
	workdir      string
	script       string
	apachePort   int
	ontoflowPort int
	user, pass   string
	hash         string
	runs         int
	rounds       int
	only         map[string]bool
	cpuprofile   string
	s3cpuprofile string
	out          string
	files10k     int
	files100k    int
	bigMiB       int
	smallCount   int
	// store, when set, adds a third server: the same handler in S3 mode
	// ("versitygw" = start versitygw here, else an s3:// store URL whose
	// credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY).
	store     string
	s3Port    int
	versitygw string
	bigPutN   int
	bigPutMiB int
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	var cfg runConfig
	var only string
	fs.StringVar(&cfg.workdir, "workdir", "/tmp/davbench", "directory for both servers' trees, databases and logs (kept between runs; trees are reused)")
	fs.StringVar(&cfg.script, "script", "scripts/apache-webdav.sh", "the Apache start/stop script")
	fs.IntVar(&cfg.apachePort, "apache-port", 8091, "Apache's loopback port")
	fs.IntVar(&cfg.ontoflowPort, "ontoflow-port", 8092, "Ontoflow's loopback port")
	fs.StringVar(&cfg.user, "user", "bench", "user on both servers")
	fs.StringVar(&cfg.pass, "password", "bench-password-1", "password on both servers")
	fs.StringVar(&cfg.hash, "apache-hash", "sha", "Apache's htpasswd hash: sha or apr1")
	fs.IntVar(&cfg.runs, "runs", 7, "timed PROPFINDs of the 10,000-file folder per server (median reported)")
	fs.IntVar(&cfg.rounds, "rounds", 3, "timed rounds of GET / PUT / small PUT per server (median reported)")
	fs.StringVar(&only, "only", "mem,propfind,move,get,put,small", "benchmarks to run, comma-separated")
	fs.StringVar(&cfg.cpuprofile, "cpuprofile", "", "CPU profile of the Ontoflow serve child over the whole run")
	fs.StringVar(&cfg.s3cpuprofile, "s3-cpuprofile", "", "CPU profile of the S3-mode serve child (-store) over the whole run")
	fs.StringVar(&cfg.out, "out", "", "also write the Markdown results to FILE")
	fs.IntVar(&cfg.files10k, "files", 10000, "files in the timed PROPFIND folder")
	fs.IntVar(&cfg.files100k, "mem-files", 100000, "files in the memory PROPFIND folder")
	fs.IntVar(&cfg.bigMiB, "big-mib", 100, "size of the GET / PUT file in MiB")
	fs.IntVar(&cfg.smallCount, "small", 1000, "4 KiB files PUT by 8 clients per round")
	fs.StringVar(&cfg.store, "store", "", "also run Ontoflow in S3 mode: versitygw (start it over WORKDIR/s3) or an s3://bucket/prefix?endpoint=... URL")
	fs.IntVar(&cfg.s3Port, "s3-ontoflow-port", 8093, "the S3-mode Ontoflow's loopback port")
	fs.IntVar(&cfg.bigPutN, "bigput-n", 8, "concurrent PUTs of the bigput benchmark (not in the default -only: it writes n x bigput-mib to each Ontoflow server)")
	fs.IntVar(&cfg.bigPutMiB, "bigput-mib", 1024, "size of each bigput PUT in MiB")
	fs.StringVar(&cfg.versitygw, "versitygw", "", "versitygw binary for -store versitygw (default: as internal/harness/s3test finds it)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.only = map[string]bool{}
	for _, b := range strings.Split(only, ",") {
		cfg.only[strings.TrimSpace(b)] = true
	}
	wd, err := filepath.Abs(cfg.workdir)
	if err != nil {
		return fmt.Errorf("resolve workdir: %w", err)
	}
	cfg.workdir = wd
	if cfg.script, err = filepath.Abs(cfg.script); err != nil {
		return fmt.Errorf("resolve script: %w", err)
	}

	rep := &report{command: "davbench run " + strings.Join(args, " "), loadBefore: loadAvg()}
	slog.Info("preparing trees", "workdir", cfg.workdir)
	big := make([]byte, cfg.bigMiB<<20)
	fillRandom(big, 1)
	small := make([]byte, 4096)
	fillRandom(small, 2)

	ontoRoot := filepath.Join(cfg.workdir, "ontoflow", "files")
	ontoDB := filepath.Join(cfg.workdir, "ontoflow", "ontoflow.db")
	userID, err := prepareOntoflowUser(ctx, ontoDB, cfg.user, cfg.pass)
	if err != nil {
		return err
	}
	apacheDir := filepath.Join(cfg.workdir, "apache")
	trees := []string{filepath.Join(ontoRoot, userID), filepath.Join(apacheDir, "htdocs", "dav")}
	for _, t := range trees {
		if err := populate(t, "p10k", cfg.files10k); err != nil {
			return err
		}
		if err := populate(t, "p100k", cfg.files100k); err != nil {
			return err
		}
		if err := writeIfDifferent(filepath.Join(t, "big.bin"), big); err != nil {
			return err
		}
	}
	// The workdir's parents must be traversable by Apache's www-data workers.
	if err := os.Chmod(cfg.workdir, 0o755); err != nil {
		return fmt.Errorf("open up workdir: %w", err)
	}

	apache, stopApache, err := startApache(ctx, cfg, apacheDir)
	if err != nil {
		return err
	}
	defer stopApache()
	onto, stopOnto, err := startOntoflow(cfg, ontoRoot, ontoDB)
	if err != nil {
		return err
	}
	defer stopOnto()
	servers := []*server{apache, onto}
	var alone *s3Alone
	if cfg.store != "" {
		s3srv, a, stopS3, err := startOntoflowS3(ctx, cfg, big)
		alone = a
		if err != nil {
			return err
		}
		defer stopS3()
		servers = append(servers, s3srv)
	}
	for _, s := range servers {
		if err := waitReady(ctx, s); err != nil {
			return err
		}
		// Warm-up: authentication (Ontoflow's first Basic verification is
		// an argon2id hash, then cached), database connections, code pages.
		c := newClient()
		if _, _, _, err := s.propfind(ctx, c, ""); err != nil {
			return fmt.Errorf("warm up: %w", err)
		}
		c.CloseIdleConnections()
		pids, err := s.pids()
		if err != nil {
			return err
		}
		rep.idle = append(rep.idle, float64(totalRSS(snapshot(pids)))/1024)
	}

	// Before starting, how busy was the machine? Five seconds of /proc/stat
	// with nothing of ours running.
	p0, k0 := machineBusy()
	time.Sleep(5 * time.Second)
	p1, k1 := machineBusy()
	rep.busyBefore = (p1 - p0 + k1 - k0) / 5 / float64(runtime.NumCPU()) * 100

	b := &benches{cfg: cfg, rep: rep, servers: servers, big: big, small: small, alone: alone}
	if alone != nil {
		if err := alone.putObject(ctx, "alone/big.bin", big); err != nil {
			return err
		}
	}
	mStart, kStart := machineBusy()
	selfStart := selfCPU()
	srvStart := make([]float64, len(servers))
	for i, s := range servers {
		srvStart[i] = s.cpu()
	}
	wallStart := time.Now()
	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		// Memory first, right after start: the other benchmarks move
		// 100 MiB bodies and would leave high-water marks behind.
		{"mem", b.mem},
		{"propfind", b.propfind},
		{"move", b.move},
		{"get", b.get},
		{"put", b.put},
		{"small", b.smallPut},
		{"bigput", b.bigPut},
	}
	for _, st := range steps {
		if !cfg.only[st.name] {
			continue
		}
		slog.Info("benchmark", "name", st.name)
		if err := st.fn(ctx); err != nil {
			return fmt.Errorf("benchmark %s: %w", st.name, err)
		}
	}
	// Whatever the machine spent beyond the two servers and this client
	// was other work competing for the two cores during the measurements.
	own := selfCPU() - selfStart
	for i, s := range servers {
		own += s.cpu() - srvStart[i]
	}
	mEnd, kEnd := machineBusy()
	rep.otherCPU = mEnd - mStart - own
	rep.kernelCPU = kEnd - kStart
	rep.wall = time.Since(wallStart)
	rep.loadAfter = loadAvg()
	rep.apacheVersion = apacheVersion(ctx)
	for _, s := range servers {
		rep.names = append(rep.names, s.name)
	}
	md := rep.markdown()
	fmt.Print(md)
	if cfg.out != "" {
		if err := os.WriteFile(cfg.out, []byte(md), 0o644); err != nil {
			return fmt.Errorf("write results: %w", err)
		}
	}
	return nil
}

func fillRandom(b []byte, seed uint64) {
	r := rand.NewChaCha8([32]byte{byte(seed)})
	_, _ = r.Read(b)
}

func prepareOntoflowUser(ctx context.Context, dbPath, user, pass string) (string, error) {
	db, err := openDB(ctx, dbPath)
	if err != nil {
		return "", err
	}
	id, err := ensureUser(ctx, db, user, pass)
	// Closed before the serve child opens the same file.
	if sqlDB, derr := db.DB(); derr == nil {
		sqlDB.Close()
	}
	return id, err
}

// populate makes dir/name hold exactly n small files (kept between runs).
// Both servers get byte-identical trees: same names, sizes, .txt type.
func populate(dir, name string, n int) error {
	p := filepath.Join(dir, name)
	if f, err := os.Open(p); err == nil {
		names, _ := f.Readdirnames(-1)
		f.Close()
		if len(names) == n {
			return nil
		}
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("clear %s: %w", p, err)
		}
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", p, err)
	}
	slog.Info("populating", "dir", p, "files", n)
	content := []byte(strings.Repeat("davbench file content line\n", 4))
	for i := range n {
		fp := filepath.Join(p, fmt.Sprintf("file-%06d.txt", i))
		if err := os.WriteFile(fp, content, 0o644); err != nil {
			return fmt.Errorf("populate %s: %w", p, err)
		}
	}
	return nil
}

func writeIfDifferent(path string, b []byte) error {
	if st, err := os.Stat(path); err == nil && st.Size() == int64(len(b)) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func startApache(ctx context.Context, cfg runConfig, dir string) (*server, func(), error) {
	args := []string{"start", "--dir", dir, "--port", strconv.Itoa(cfg.apachePort),
		"--user", cfg.user, "--password", cfg.pass, "--hash", cfg.hash}
	cmd := exec.CommandContext(ctx, cfg.script, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, nil, fmt.Errorf("start apache (%s %s): %w", cfg.script, strings.Join(args, " "), err)
	}
	stop := func() {
		c := exec.Command(cfg.script, "stop", "--dir", dir)
		c.Stdout, c.Stderr = os.Stderr, os.Stderr
		if err := c.Run(); err != nil {
			slog.Error("stop apache", "err", err)
		}
	}
	pidFile := filepath.Join(dir, "var", "httpd.pid")
	s := &server{
		name: "Apache",
		base: fmt.Sprintf("http://127.0.0.1:%d/dav/", cfg.apachePort),
		user: cfg.user, pass: cfg.pass,
		pids: func() ([]int, error) {
			b, err := os.ReadFile(pidFile)
			if err != nil {
				return nil, fmt.Errorf("read apache pid file: %w", err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				return nil, fmt.Errorf("parse apache pid file: %w", err)
			}
			return withChildren(pid), nil
		},
	}
	return s, stop, nil
}

func startOntoflow(cfg runConfig, root, dbPath string) (*server, func(), error) {
	return startServe(cfg, "Ontoflow", cfg.ontoflowPort, root, dbPath, nil, nil)
}

// startServe starts a `davbench serve` child named name on port with more
// arguments and environment.
func startServe(cfg runConfig, name string, port int, root, dbPath string, more, env []string) (*server, func(), error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("find own executable: %w", err)
	}
	dir := filepath.Dir(root)
	args := []string{"serve", "--root", root, "--db", dbPath,
		"--addr", fmt.Sprintf("127.0.0.1:%d", port),
		"--log", filepath.Join(dir, "access.log")}
	args = append(args, more...)
	prof := cfg.cpuprofile
	if port != cfg.ontoflowPort {
		prof = cfg.s3cpuprofile
	}
	if prof != "" {
		p, err := filepath.Abs(prof)
		if err != nil {
			return nil, nil, fmt.Errorf("resolve cpuprofile: %w", err)
		}
		args = append(args, "--cpuprofile", p)
	}
	logf, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		return nil, nil, fmt.Errorf("create serve log: %w", err)
	}
	// Not CommandContext: the child must get SIGTERM (to flush its CPU
	// profile), not SIGKILL, when the run ends.
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, nil, fmt.Errorf("start serve child: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				slog.Error("serve child", "err", err, "log", logf.Name())
			}
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		logf.Close()
	}
	pid := cmd.Process.Pid
	s := &server{
		name: name,
		settle: func() error {
			if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
				return fmt.Errorf("signal serve child: %w", err)
			}
			time.Sleep(time.Second)
			return nil
		},
		base: fmt.Sprintf("http://127.0.0.1:%d/webdav/", port),
		user: cfg.user, pass: cfg.pass,
		pids: func() ([]int, error) {
			select {
			case err := <-exited:
				exited <- err
				return nil, fmt.Errorf("serve child exited (%v); see %s", err, logf.Name())
			default:
			}
			return []int{pid}, nil
		},
	}
	return s, stop, nil
}

func waitReady(ctx context.Context, s *server) error {
	c := newClient()
	defer c.CloseIdleConnections()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := s.pids(); err != nil {
			return err
		}
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		resp, err := s.do(rctx, c, http.MethodOptions, "", nil, nil, 0)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		cancel()
		if err == nil {
			if resp.StatusCode >= 400 {
				return fmt.Errorf("%s answers OPTIONS with %d", s.name, resp.StatusCode)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after 30s: %w", s.name, err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func apacheVersion(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "/usr/sbin/apache2", "-v").Output()
	if err != nil {
		return "?"
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(strings.TrimPrefix(line, "Server version:"))
}

// benches holds what every benchmark needs.
type benches struct {
	cfg     runConfig
	rep     *report
	servers []*server // Apache first, Ontoflow second
	big     []byte
	small   []byte
	alone   *s3Alone // -store versitygw: the S3 server driven directly
}

// quiesce writes the workdir's dirty pages back to disk, then waits until
// neither server has used CPU for 100 ms (at most 10 s). Work a server
// defers past its response (Ontoflow hashes large uploads in the
// background) and the kernel's write-back of what a round wrote must
// neither overlap the other server's measurement nor the next round; the
// CPU figures, taken after quiescing, include the servers' share.
func (b *benches) quiesce() {
	if d, err := os.Open(b.cfg.workdir); err == nil {
		if err := unix.Syncfs(int(d.Fd())); err != nil {
			slog.Warn("syncfs", "err", err)
		}
		d.Close()
	}
	total := func() float64 {
		var t float64
		for _, s := range b.servers {
			t += s.cpu()
		}
		return t
	}
	prev := total()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		cur := total()
		if cur == prev {
			return
		}
		prev = cur
	}
	slog.Warn("servers still busy after 10 s; measuring anyway")
}

func (b *benches) mem(ctx context.Context) error {
	res := make([]memResult, len(b.servers))
	for i, s := range b.servers {
		if s.settle != nil {
			if err := s.settle(); err != nil {
				return err
			}
		}
		c := newClient()
		b.quiesce()
		r, err := s.propfindMem(ctx, c, "p100k/", b.cfg.files100k+1)
		c.CloseIdleConnections()
		if err != nil {
			return err
		}
		res[i] = r
	}
	detail := func(r memResult) string {
		return fmt.Sprintf("RSS before %.1f MiB, %.1f MiB still held 1 s later, answer in %d ms",
			float64(r.Before)/1024, float64(r.Retained)/1024, r.Took.Milliseconds())
	}
	peak := make([]float64, len(res))
	vals := make([]string, len(res))
	var notes []string
	for i, r := range res {
		peak[i] = float64(r.Peak) / 1024
		vals[i] = fmt.Sprintf("+%.1f MiB", peak[i])
		notes = append(notes, b.servers[i].name+": "+detail(r)+".")
	}
	x := row{
		name:  fmt.Sprintf("PROPFIND Depth 1 allprop, %s files: server RSS growth", thousands(b.cfg.files100k)),
		vals:  vals,
		ratio: ratio(peak[1], peak[0]), target: "≤ 8 MiB", met: peak[1] <= 8,
		notes: strings.Join(notes, " "),
	}
	if len(peak) > 2 {
		x.s3ratio, x.s3target, x.s3met = ratio(peak[2], peak[1]), "≤ 8 MiB", peak[2] <= 8
	}
	b.rep.add(x)
	return nil
}

func (b *benches) propfind(ctx context.Context) error {
	n := len(b.servers)
	ms := make([][]float64, n)
	size := make([]int64, n)
	cpu := make([]float64, n)
	clients := make([]*http.Client, n)
	for i := range clients {
		clients[i] = newClient()
	}
	defer func() {
		for _, c := range clients {
			c.CloseIdleConnections()
		}
	}()
	for run := -2; run < b.cfg.runs; run++ { // runs -2 and -1 warm caches up
		for i, s := range b.servers {
			b.quiesce()
			c0 := s.cpu()
			d, n, sz, err := s.propfind(ctx, clients[i], "p10k/")
			if err != nil {
				return err
			}
			if run >= 0 {
				b.quiesce()
				cpu[i] += s.cpu() - c0
			}
			if n != b.cfg.files10k+1 {
				return fmt.Errorf("PROPFIND p10k on %s: %d entries, want %d", s.name, n, b.cfg.files10k+1)
			}
			size[i] = sz
			if run >= 0 {
				ms[i] = append(ms[i], float64(d.Microseconds())/1000)
			}
		}
	}
	med := make([]float64, n)
	vals := make([]string, n)
	var notes []string
	for i, s := range b.servers {
		med[i] = median(ms[i])
		vals[i] = fmt.Sprintf("%.0f ms", med[i])
		notes = append(notes, fmt.Sprintf("%s runs %s ms, %.1f MB answer, server CPU %.0f ms a run.",
			s.name, list(ms[i]), float64(size[i])/1e6, 1000*cpu[i]/float64(b.cfg.runs)))
	}
	x := row{
		name:  fmt.Sprintf("PROPFIND Depth 1 allprop, %s files (median of %d)", thousands(b.cfg.files10k), b.cfg.runs),
		vals:  vals,
		ratio: ratio(med[1], med[0]), target: "≤ 0.5x", met: med[1] <= 0.5*med[0],
		notes: strings.Join(notes, " "),
	}
	if n > 2 {
		// Issue 28: S3 mode's listing against Apache, as POSIX mode's.
		x.s3ratio, x.s3target, x.s3met = ratio(med[2], med[0])+" of Apache", "≤ 0.5x Apache", med[2] <= 0.5*med[0]
	}
	b.rep.add(x)
	return nil
}

// move times a MOVE of the 10,000-file folder to a new name and back
// (both timed): a rename for POSIX mode and Apache, one transaction of
// metadata in S3 mode.
func (b *benches) move(ctx context.Context) error {
	n := len(b.servers)
	ms := make([][]float64, n)
	for run := -1; run < b.cfg.runs; run++ {
		for i, s := range b.servers {
			c := newClient()
			b.quiesce()
			for _, mv := range [][2]string{{"p10k/", "p10k-moved/"}, {"p10k-moved/", "p10k/"}} {
				start := time.Now()
				resp, err := s.do(ctx, c, "MOVE", mv[0], map[string]string{"Destination": s.base + mv[1], "Overwrite": "F"}, nil, 0)
				if err != nil {
					return err
				}
				if err := expect(resp, http.StatusCreated); err != nil {
					return fmt.Errorf("%s: MOVE %s: %w", s.name, mv[0], err)
				}
				if run >= 0 {
					ms[i] = append(ms[i], float64(time.Since(start).Microseconds())/1000)
				}
			}
			c.CloseIdleConnections()
		}
	}
	med := make([]float64, n)
	vals := make([]string, n)
	var notes []string
	for i, s := range b.servers {
		med[i] = median(ms[i])
		vals[i] = fmt.Sprintf("%.1f ms", med[i])
		notes = append(notes, fmt.Sprintf("%s: %s ms.", s.name, list(ms[i])))
	}
	x := row{
		name:  fmt.Sprintf("MOVE of a folder of %s files (median of %d)", thousands(b.cfg.files10k), 2*b.cfg.runs),
		vals:  vals,
		ratio: ratio(med[1], med[0]), target: "—", met: true,
		notes: strings.Join(notes, " "),
	}
	if n > 2 {
		x.s3ratio, x.s3target, x.s3met = ratio(med[2], med[1]), "≤ 50 ms", med[2] <= 50
	}
	b.rep.add(x)
	return nil
}

func (b *benches) get(ctx context.Context) error {
	n := len(b.servers)
	mibs := make([][]float64, n)
	cpu, client := make([]float64, n), make([]float64, n)
	var aloneV []float64
	var aloneCPU float64
	for round := -1; round < b.cfg.rounds; round++ { // round -1 warms up
		for i, s := range b.servers {
			c := newClient()
			b.quiesce()
			c0, l0 := s.cpu(), selfCPU()
			v, err := s.getParallel(ctx, c, "big.bin", int64(len(b.big)), 4)
			c.CloseIdleConnections()
			if err != nil {
				return err
			}
			if round >= 0 {
				mibs[i] = append(mibs[i], v)
				b.quiesce()
				cpu[i] += s.cpu() - c0
				client[i] += selfCPU() - l0
			}
		}
		if b.alone != nil {
			b.quiesce()
			c0 := b.alone.cpu()
			v, err := b.alone.getParallel(ctx, "alone/big.bin", int64(len(b.big)), 4)
			if err != nil {
				return err
			}
			if round >= 0 {
				aloneV = append(aloneV, v)
				b.quiesce()
				aloneCPU += b.alone.cpu() - c0
			}
		}
	}
	// The client's receive side is the same code for every server; its CPU
	// shows how much of the two cores was left to the server.
	mib := float64(4 * b.cfg.bigMiB * b.cfg.rounds)
	var cn []string
	for i, s := range b.servers {
		cn = append(cn, fmt.Sprintf("%.0f against %s", client[i]/mib*100*1000, s.name))
	}
	clientNote := " Client CPU, ms per 100 MiB: " + strings.Join(cn, ", ") + "."
	b.addThroughput(fmt.Sprintf("GET %d MiB, 4 clients (median of %d)", b.cfg.bigMiB, b.cfg.rounds), "MiB/s", mibs,
		b.cpuNote(cpu, mib, "ms per 100 MiB", 100*1000)+clientNote)
	b.addAlone(fmt.Sprintf("GET %d MiB, 4 clients", b.cfg.bigMiB), "MiB/s", aloneV, mibs,
		fmt.Sprintf(" versitygw CPU %.0f ms per 100 MiB.", aloneCPU/mib*100*1000))
	return nil
}

func (b *benches) put(ctx context.Context) error {
	n := len(b.servers)
	mibs := make([][]float64, n)
	cpu := make([]float64, n)
	var aloneV []float64
	var aloneCPU float64
	// Round -1 creates the file; the timed rounds replace it, which is the
	// case atomicity is about (a reader keeps seeing the old version).
	for round := -1; round < b.cfg.rounds; round++ {
		for i, s := range b.servers {
			c := newClient()
			b.quiesce()
			c0 := s.cpu()
			v, err := s.put(ctx, c, "put-big.bin", b.big)
			c.CloseIdleConnections()
			if err != nil {
				return err
			}
			if round >= 0 {
				mibs[i] = append(mibs[i], v)
				b.quiesce()
				cpu[i] += s.cpu() - c0
			}
		}
		if b.alone != nil {
			b.quiesce()
			c0 := b.alone.cpu()
			v, err := b.alone.put(ctx, "alone/put-big.bin", b.big)
			if err != nil {
				return err
			}
			if round >= 0 {
				aloneV = append(aloneV, v)
				b.quiesce()
				aloneCPU += b.alone.cpu() - c0
			}
		}
	}
	b.addThroughput(fmt.Sprintf("PUT %d MiB replacing a file, 1 client (median of %d)", b.cfg.bigMiB, b.cfg.rounds), "MiB/s", mibs,
		b.cpuNote(cpu, float64(b.cfg.bigMiB*b.cfg.rounds), "ms per 100 MiB", 100*1000))
	b.addAlone(fmt.Sprintf("PUT %d MiB replacing an object, 1 client", b.cfg.bigMiB), "MiB/s", aloneV, mibs,
		fmt.Sprintf(" versitygw CPU %.0f ms per 100 MiB.", aloneCPU/float64(b.cfg.bigMiB*b.cfg.rounds)*100*1000))
	return nil
}

func (b *benches) smallPut(ctx context.Context) error {
	n := len(b.servers)
	rps := make([][]float64, n)
	cpu := make([]float64, n)
	var aloneV []float64
	var aloneCPU float64
	stamp := time.Now().UTC().Format("20060102T150405")
	for round := -1; round < b.cfg.rounds; round++ {
		for i, s := range b.servers {
			c := newClient()
			count := b.cfg.smallCount
			if round < 0 {
				count = 200
			}
			folder := fmt.Sprintf("small-%s-%d/", stamp, round+1)
			b.quiesce()
			c0 := s.cpu()
			v, err := s.putMany(ctx, c, folder, b.small, count, 8)
			c.CloseIdleConnections()
			if err != nil {
				return err
			}
			if round >= 0 {
				rps[i] = append(rps[i], v)
				b.quiesce()
				cpu[i] += s.cpu() - c0
			}
		}
		if b.alone != nil {
			count := b.cfg.smallCount
			if round < 0 {
				count = 200
			}
			b.quiesce()
			c0 := b.alone.cpu()
			v, err := b.alone.putMany(ctx, fmt.Sprintf("alone/small-%s-%d/", stamp, round+1), b.small, count, 8)
			if err != nil {
				return err
			}
			if round >= 0 {
				aloneV = append(aloneV, v)
				b.quiesce()
				aloneCPU += b.alone.cpu() - c0
			}
		}
	}
	b.addThroughput(fmt.Sprintf("PUT %s x 4 KiB new files, 8 clients (median of %d)", thousands(b.cfg.smallCount), b.cfg.rounds), "req/s", rps,
		b.cpuNote(cpu, float64(b.cfg.smallCount*b.cfg.rounds), "µs per request", 1e6))
	b.addAlone(fmt.Sprintf("PUT %s x 4 KiB new objects, 8 clients", thousands(b.cfg.smallCount)), "req/s", aloneV, rps,
		fmt.Sprintf(" versitygw CPU %.0f µs per request.", aloneCPU/float64(b.cfg.smallCount*b.cfg.rounds)*1e6))
	return nil
}

// cpuNote describes the servers' CPU time per unit of work: units is the
// work done in the timed rounds, scale converts seconds per unit to what
// label names.
func (b *benches) cpuNote(cpu []float64, units float64, label string, scale float64) string {
	if units == 0 {
		return ""
	}
	var parts []string
	for i, s := range b.servers {
		parts = append(parts, fmt.Sprintf("%s %.0f", s.name, cpu[i]/units*scale))
	}
	return fmt.Sprintf(" Server CPU (user+system, including work finished after the response): %s %s.", strings.Join(parts, ", "), label)
}

// addThroughput adds a row where more is better: POSIX mode's target is
// 2x Apache, S3 mode's (issue 28) 0.5x POSIX mode.
func (b *benches) addThroughput(name, unit string, v [][]float64, extra string) {
	med := make([]float64, len(v))
	vals := make([]string, len(v))
	var rounds []string
	for i, s := range b.servers {
		med[i] = median(v[i])
		vals[i] = fmt.Sprintf("%s %s", thousands(int(med[i]+0.5)), unit)
		rounds = append(rounds, fmt.Sprintf("%s rounds %s", s.name, list(v[i])))
	}
	x := row{
		name: name, vals: vals,
		ratio: ratio(med[1], med[0]), target: "≥ 2x", met: med[1] >= 2*med[0],
		notes: strings.Join(rounds, "; ") + " (" + unit + ")." + extra,
	}
	if len(med) > 2 {
		x.s3ratio, x.s3target, x.s3met = ratio(med[2], med[1]), "≥ 0.5x", med[2] >= 0.5*med[1]
	}
	b.rep.add(x)
}

// addAlone adds the S3-server-alone row after a throughput benchmark: its
// median in the S3 column, compared with POSIX mode (v[1]) as S3 mode is,
// and S3 mode's share of it in the notes.
func (b *benches) addAlone(name, unit string, alone []float64, v [][]float64, extra string) {
	if b.alone == nil || len(v) < 3 {
		return
	}
	med := median(alone)
	posix, s3 := median(v[1]), median(v[2])
	b.rep.add(row{
		name:  fmt.Sprintf("%s: %s, AWS SDK, no Ontoflow (median of %d)", s3AloneName, name, len(alone)),
		vals:  []string{"—", "—", fmt.Sprintf("%s %s", thousands(int(med+0.5)), unit)},
		ratio: "—", target: "—",
		s3ratio: ratio(med, posix), s3target: "—",
		notes: fmt.Sprintf("rounds %s (%s); Ontoflow S3 reaches %s of it.%s", list(alone), unit, ratio(s3, med), extra),
	})
}

func ratio(o, a float64) string {
	if a == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", o/a)
}

func list(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strings.Join(s, ", ")
}

func thousands(n int) string {
	s := strconv.Itoa(n)
	var out []byte
	for i, c := range []byte(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, c)
	}
	return string(out)
}

// buildRev may name the handler's commit at link time (-ldflags
// "-X main.buildRev=..."), for builds from an exported tree without .git.
var buildRev string

// buildRevision names the commit the handler was built from (go build
// -buildvcs=true stamps it), so results can be tied to a version of webdav/.
func buildRevision() string {
	if buildRev != "" {
		return "commit " + buildRev + " (exported clean tree)"
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "build information unavailable"
	}
	var rev, when, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "commit unknown (build with go build -buildvcs=true to record it)"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	out := "commit " + rev + " (" + when + ")"
	if modified == "true" {
		out += ", tree not clean (uncommitted or untracked files somewhere)"
	}
	return out
}

// row is one benchmark: vals in the servers' order (Apache, Ontoflow,
// then Ontoflow in S3 mode when it runs); ratio/target/met compare
// Ontoflow with Apache, s3ratio/s3target/s3met S3 mode with its reference.
type row struct {
	name              string
	vals              []string
	ratio, target     string
	met               bool
	s3ratio, s3target string
	s3met             bool
	notes             string
}

type report struct {
	command               string
	loadBefore, loadAfter string
	busyBefore            float64       // % of all CPUs busy in the 5 s before the benchmarks
	otherCPU              float64       // CPU seconds used by other processes during them
	kernelCPU             float64       // CPU seconds in irq/softirq/steal during them
	wall                  time.Duration // duration of the benchmarks
	apacheVersion         string
	idle                  []float64 // MiB, in the servers' order
	names                 []string  // the servers'
	rows                  []row
}

func (r *report) add(x row) { r.rows = append(r.rows, x) }

func (r *report) markdown() string {
	var sb strings.Builder
	cpus, model, mem, kernel := machineFacts()
	fmt.Fprintf(&sb, "Ontoflow: %s.\n\n", buildRevision())
	fmt.Fprintf(&sb, "Machine: %d CPUs (nproc %d), %s, MemTotal %s, Linux %s; %s; %s. Load average before %s, after %s. "+
		"CPUs %.0f%% busy in the 5 s before the benchmarks; during the %.0f s of benchmarks other processes used %.1f CPU-seconds, interrupts/softirq (loopback TCP)/steal %.1f.\n\n",
		cpus, runtime.NumCPU(), model, mem, kernel, runtime.Version(), r.apacheVersion, r.loadBefore, r.loadAfter,
		r.busyBefore, r.wall.Seconds(), r.otherCPU, r.kernelCPU)
	if len(r.idle) == len(r.names) && len(r.idle) > 0 {
		var idle []string
		for i, n := range r.names {
			idle = append(idle, fmt.Sprintf("%s %.1f MiB", n, r.idle[i]))
		}
		fmt.Fprintf(&sb, "Idle RSS after warm-up (all of a server's processes): %s.\n\n", strings.Join(idle, ", "))
	}
	yes := func(ok bool, target string) string {
		if target == "—" {
			return "—"
		}
		if ok {
			return "yes"
		}
		return "**no**"
	}
	s3 := len(r.names) > 2
	sb.WriteString("| benchmark | Apache mod_dav | Ontoflow | Ontoflow / Apache | target | met |")
	if s3 {
		sb.WriteString(" Ontoflow S3 | S3 / POSIX | S3 target | met |")
	}
	sb.WriteString("\n|---|---|---|---|---|---|")
	if s3 {
		sb.WriteString("---|---|---|---|")
	}
	sb.WriteString("\n")
	for _, x := range r.rows {
		fmt.Fprintf(&sb, "| %s | %s | %s | %s | %s | %s |", x.name, x.vals[0], x.vals[1], x.ratio, x.target, yes(x.met, x.target))
		if s3 && len(x.vals) > 2 {
			fmt.Fprintf(&sb, " %s | %s | %s | %s |", x.vals[2], x.s3ratio, x.s3target, yes(x.s3met, x.s3target))
		}
		sb.WriteString("\n")
	}
	sb.WriteString("\n")
	for _, x := range r.rows {
		fmt.Fprintf(&sb, "- %s: %s\n", x.name, x.notes)
	}
	fmt.Fprintf(&sb, "\nCommand: `%s`\n", r.command)
	return sb.String()
}
