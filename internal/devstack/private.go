package devstack

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// A private cluster lives in the temp directory, not in the clone: the
// server user (postgres, when we are root) must reach it whatever the
// permissions of the clone's parents (a 0700 home), and its socket path
// must stay short. The name is derived from the stack's state directory, so
// each stack has its own; an owner file names the process that started it,
// so a cluster left by a killed run is recognised and removed.
const privatePrefix = "fleetsaga-pg-"

// PrivateClusterDir is where the private cluster of the stack whose state
// lives in stateDir (an absolute path) is kept.
func PrivateClusterDir(stateDir string) string {
	sum := sha256.Sum256([]byte(stateDir))
	return filepath.Join(os.TempDir(), privatePrefix+hex.EncodeToString(sum[:6]))
}

const ownerFile = "owner"

// claimPrivateDir makes dir (0700, owned by the server user) for this
// process. A leftover of a dead process is removed first; a cluster of a
// live one is refused.
func claimPrivateDir(dir string, serverUser *user.User) error {
	if pid, alive := ownerAlive(dir); alive {
		return fmt.Errorf("the private PostgreSQL in %s belongs to a running stack (pid %d): stop it first (make down)", dir, pid)
	}
	if err := reap(dir); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	stamp := fmt.Sprintf("%d %s\n", os.Getpid(), startTime(os.Getpid()))
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(stamp), 0o644); err != nil {
		return err
	}
	if serverUser == nil {
		return nil
	}
	uid, _ := strconv.Atoi(serverUser.Uid)
	gid, _ := strconv.Atoi(serverUser.Gid)
	return os.Lchown(dir, uid, gid)
}

// ReapLeftovers removes the private clusters whose owner process is gone
// (a killed test binary or devstack), stopping their servers first.
func ReapLeftovers(log zerolog.Logger) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), privatePrefix+"*"))
	for _, dir := range dirs {
		if _, alive := ownerAlive(dir); alive {
			continue
		}
		if info, err := os.Stat(filepath.Join(dir, ownerFile)); err != nil {
			// No owner yet: a cluster being claimed this very moment, unless old.
			if d, derr := os.Stat(dir); derr != nil || time.Since(d.ModTime()) < time.Minute {
				continue
			}
		} else if info.IsDir() {
			continue
		}
		if err := reap(dir); err != nil {
			log.Warn().Err(err).Str("dir", dir).Msg("could not remove a leftover private PostgreSQL")
			continue
		}
		log.Info().Str("dir", dir).Msg("removed a private PostgreSQL left by a run that was killed")
	}
}

// reap stops the server of a private cluster, if one runs, and removes it.
func reap(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if pid := postmasterPID(dir); pid > 0 && syscall.Kill(pid, 0) == nil {
		_ = syscall.Kill(pid, syscall.SIGQUIT) // immediate shutdown: nothing in it is kept
		for deadline := time.Now().Add(20 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				time.Sleep(200 * time.Millisecond)
				break
			}
		}
	}
	return os.RemoveAll(dir)
}

func postmasterPID(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	return pid
}

// ownerAlive reports whether the process named in dir's owner file still
// runs (the same process: its start time guards against a reused PID).
func ownerAlive(dir string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 || syscall.Kill(pid, 0) != nil {
		return pid, false
	}
	if len(f) > 1 && f[1] != startTime(pid) {
		return pid, false
	}
	return pid, true
}

// startTime is the process's start time in clock ticks since boot (field 22
// of /proc/PID/stat), or "" where /proc is not there.
func startTime(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
}
