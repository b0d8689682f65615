package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// initArg0 marks a re-exec of this binary as the namespace init (see init below).
const initArg0 = "spade-sandbox-init"

// initSpec is what the parent tells the namespace init.
type initSpec struct {
	Argv     []string    `json:"argv"`
	Env      []string    `json:"env"`
	Binds    []string    `json:"binds"`    // directories to show read-only
	Symlinks [][2]string `json:"symlinks"` // target, path
	Files    []string    `json:"files"`    // files under /etc to show read-only
	TmpBytes int64       `json:"tmp_bytes"`
	SetUID   bool        `json:"setuid"` // start the harness as SandboxUID (root hosts)
}

func init() {
	// The namespace init is this binary re-executed with argv[0] = initArg0; it never returns.
	if len(os.Args) == 2 && os.Args[0] == initArg0 {
		runtime.LockOSThread()
		if err := runInit(os.Args[1]); err != nil {
			fmt.Fprintf(os.Stderr, "spade sandbox init: %v\n", err)
			os.Exit(111)
		}
		os.Exit(0)
	}
}

// namespaceCommand builds the re-exec of this binary in new user, pid, net, ipc, uts and
// mount namespaces. The init sees uid SandboxUID, mapped to SandboxUID on a root host (to the
// caller's own uid otherwise), holds CAP_SYS_ADMIN in its namespace only while it builds the
// filesystem view, and then starts the harness without any capability.
func namespaceCommand(py *Python, o *Options, argv []string, attr *syscall.SysProcAttr) (*exec.Cmd, error) {
	spec := initSpec{Argv: argv, Env: childEnv, Files: systemFiles, TmpBytes: o.TmpBytes}
	for _, dir := range systemDirs {
		fi, err := os.Lstat(dir)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(dir); err == nil {
				spec.Symlinks = append(spec.Symlinks, [2]string{target, dir})
			}
		case fi.IsDir():
			spec.Binds = append(spec.Binds, dir)
		}
	}
	spec.Binds = append(spec.Binds, pythonDirs(py)...)
	exePath, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("namespace init: finding own executable: %w", err)
	}
	cmd := &exec.Cmd{Path: exePath, Args: []string{initArg0, ""}, Env: []string{}}
	attr.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
		syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS
	if os.Getuid() == 0 {
		// A root host maps root (for the init only, which is this trusted code and needs to
		// reach its own executable) and SandboxUID to itself; the init starts the harness as
		// SandboxUID, unprivileged on the host too.
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}, {ContainerID: SandboxUID, HostID: SandboxUID, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}, {ContainerID: SandboxUID, HostID: SandboxUID, Size: 1}}
		attr.GidMappingsEnableSetgroups = true
		spec.SetUID = true
	} else {
		// Anyone else can map only their own uid: it becomes SandboxUID inside, and the init
		// holds CAP_SYS_ADMIN (ambient) just long enough to build the mounts.
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: SandboxUID, HostID: os.Getuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: SandboxUID, HostID: os.Getgid(), Size: 1}}
		attr.GidMappingsEnableSetgroups = false
		attr.Credential = &syscall.Credential{Uid: SandboxUID, Gid: SandboxUID, NoSetGroups: true}
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	cmd.Args[1] = string(data)
	return cmd, nil
}

// runInit is PID 1 of the sandbox: it builds a new root (system directories read-only, a
// fresh /proc, a minimal /dev, a size-limited tmpfs /tmp), drops its capabilities and runs
// the harness as its child, reaping orphans until the harness exits.
func runInit(specJSON string) error {
	var spec initSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making / private: %w", err)
	}
	// the new root is a tmpfs mounted over /tmp (hidden under it is the host's /tmp)
	root := "/tmp"
	if err := unix.Mount("tmpfs", root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m"); err != nil {
		return fmt.Errorf("mounting new root: %w", err)
	}
	bindRO := func(src, dst string, isDir bool) error {
		if isDir {
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
		} else {
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			if f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
				f.Close()
			}
		}
		if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", src, err)
		}
		return unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, "")
	}
	for _, dir := range spec.Binds {
		if err := bindRO(dir, root+dir, true); err != nil {
			return err
		}
	}
	for _, link := range spec.Symlinks {
		if err := os.Symlink(link[0], root+link[1]); err != nil {
			return err
		}
	}
	for _, f := range spec.Files {
		fi, err := os.Stat(f)
		if err != nil {
			continue
		}
		if err := bindRO(f, root+f, fi.IsDir()); err != nil {
			return err
		}
	}
	for _, dev := range []string{"null", "zero", "full", "random", "urandom"} {
		if err := bindRO("/dev/"+dev, root+"/dev/"+dev, false); err != nil {
			return err
		}
		// device access needs the bind without nodev
		_ = unix.Mount("", root+"/dev/"+dev, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID, "")
	}
	if err := os.MkdirAll(root+"/proc", 0o755); err != nil {
		return err
	}
	if err := unix.Mount("proc", root+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting /proc: %w", err)
	}
	if err := os.MkdirAll(root+"/tmp", 0o777); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", root+"/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("mode=1777,size=%d", spec.TmpBytes)); err != nil {
		return fmt.Errorf("mounting /tmp: %w", err)
	}
	if err := os.MkdirAll(root+"/.old", 0o700); err != nil {
		return err
	}
	if err := unix.PivotRoot(root, root+"/.old"); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	if err := unix.Unmount("/.old", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching old root: %w", err)
	}
	_ = os.Remove("/.old")
	if err := unix.Mount("", "/", "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("remounting / read-only: %w", err)
	}
	if err := os.Chdir("/tmp"); err != nil {
		return err
	}
	// Drop every capability before the harness starts; ambient capabilities would survive exec.
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if !spec.SetUID {
		// (with SetUID the harness's setuid to SandboxUID clears them, and needs CAP_SETUID)
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			return fmt.Errorf("dropping capabilities: %w", err)
		}
	}
	// the same seccomp filter as the other layers, inherited by the harness (this thread starts it)
	if err := applySeccomp(); err != nil {
		return err
	}
	cmd := exec.Command(spec.Argv[0], spec.Argv[1:]...)
	cmd.Env = spec.Env
	cmd.Dir = "/tmp"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{os.NewFile(3, "requests"), os.NewFile(4, "replies")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setsid: true}
	if spec.SetUID {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: SandboxUID, Gid: SandboxUID, Groups: []uint32{}}
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", strings.Join(spec.Argv[:1], " "), err)
	}
	os.NewFile(3, "").Close()
	os.NewFile(4, "").Close()
	// reap everything (orphans reparent to us) until the harness itself exits
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, 0, nil)
		if err != nil && err != syscall.EINTR {
			return nil
		}
		if pid == cmd.Process.Pid {
			if status.Exited() {
				os.Exit(status.ExitStatus())
			}
			os.Exit(128 + int(status.Signal()))
		}
	}
}
