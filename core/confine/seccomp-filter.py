#!/usr/bin/python3
"""Writes the seccomp filter for confined ffmpeg/ffprobe runs, as a compiled BPF program, to stdout.

bubblewrap loads it (`--seccomp FD`) after setting up the namespaces, so it covers the helpers that
run inside the sandbox (prlimit, setpriv) and ffmpeg. A denylist, as Flatpak's: ffmpeg needs a broad
set of ordinary syscalls (threads, mmap, files), and what it never needs is small and well known:
kernel and namespace administration, tracing other processes, keyrings, BPF, perf, io_uring (whose
operations bypass seccomp), and the network. Syscalls of other ABIs (x32, i386) are killed by
libseccomp's architecture check.
"""
import errno
import socket
import sys

import seccomp

# Refused with EPERM: the program sees an ordinary "operation not permitted".
DENIED = [
    # kernel, modules, system state
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
    "swapon", "swapoff", "syslog", "acct", "quotactl", "quotactl_fd", "settimeofday",
    "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname", "iopl", "ioperm",
    "vhangup", "nfsservctl", "lookup_dcookie", "uselib", "personality",
    # mounts and namespaces: the sandbox's are set up before this filter is loaded
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "open_tree", "move_mount",
    "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
    # other processes' memory and descriptors
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "process_madvise",
    # keyrings, BPF, perf, userfaultfd, file handles, fanotify
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
    "open_by_handle_at", "name_to_handle_at", "fanotify_init",
    # io_uring runs operations outside this filter's view
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    # NUMA page moves of other processes
    "migrate_pages", "move_pages", "mbind",
    # links: ffmpeg never makes them, and a link left in the folder could send the service, which
    # reads the outputs afterwards outside the sandbox, to a file elsewhere
    "symlink", "symlinkat", "link", "linkat",
]

# clone flags that create namespaces: NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET.
NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)


def build() -> seccomp.SyscallFilter:
    f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    for name in DENIED:
        try:
            f.add_rule(seccomp.ERRNO(errno.EPERM), name)
        except (RuntimeError, ValueError):
            pass  # not a syscall on this architecture
    # clone with a namespace flag, and clone3 (whose flags live in memory a filter cannot read:
    # ENOSYS makes glibc fall back to clone, which is checked).
    for flag in NAMESPACE_FLAGS:
        f.add_rule(seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    f.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    # TIOCSTI and TIOCLINUX push keystrokes into a terminal.
    f.add_rule(seccomp.ERRNO(errno.EPERM), "ioctl", seccomp.Arg(1, seccomp.MASKED_EQ, 0xFFFFFFFF, 0x5412))
    f.add_rule(seccomp.ERRNO(errno.EPERM), "ioctl", seccomp.Arg(1, seccomp.MASKED_EQ, 0xFFFFFFFF, 0x541C))
    # socket(family, ...): every family but AF_UNIX, so no network even if a namespace were missing.
    f.add_rule(seccomp.ERRNO(errno.EAFNOSUPPORT), "socket", seccomp.Arg(0, seccomp.NE, socket.AF_UNIX))
    return f


if __name__ == "__main__":
    build().export_bpf(sys.stdout)
