import Foundation
import FuseKit
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A `chunkcache mount --foreground` process: mounted when made, unmounted with ``unmount()``.
final class MountProcess: @unchecked Sendable {
    let process: CLIProcess
    let mountPoint: String

    /// Why FUSE mounts cannot be tested here, or `nil` when they can (`/dev/fuse` and `fusermount3`).
    static var unavailableReason: String? {
        guard FileManager.default.fileExists(atPath: "/dev/fuse") else { return "no /dev/fuse (FUSE is not available)" }
        guard Capabilities.path(of: "fusermount3") != nil else { return "no fusermount3 (apt-get install fuse3)" }
        return nil
    }

    /// Mounts `domain` of `store` at `mountPoint` (made if missing) and waits until the mount is in place.
    init(store: String, domain: String, at mountPoint: String, arguments: [String] = []) throws {
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        self.mountPoint = mountPoint
        process = try CLIProcess(
            ["--store", store, "mount", "--domain", domain, mountPoint, "--foreground"] + arguments)
        let deadline = Date().addingTimeInterval(20)
        while !Self.isMounted(mountPoint) {
            guard Date() < deadline else {
                process.kill9()
                let result = process.wait()
                throw MountFailed(description: "\(result)")
            }
            usleep(10_000)
        }
    }

    /// Unmounts with `fusermount3 -u` and returns how the mount process ended.
    func unmount() throws -> CLIResult {
        try runTool("fusermount3", "-u", mountPoint)
        // A mount namespace made while this mount existed (an `unshare -m` elsewhere on the machine) holds a copy
        // of it, and the kernel keeps the session open until that namespace lets go: the mount cannot end then,
        // through no fault of its own. Seen only beside other work on a shared machine.
        if !process.ends(within: 10) && Self.isHeldInAnotherNamespace(mountPoint) { process.kill9() }
        return process.wait(timeout: 30)
    }

    /// Whether another mount namespace than this process's lists a mount at `path`.
    static func isHeldInAnotherNamespace(_ path: String) -> Bool {
        let own = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/ns/mnt")
        let pids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.filter { Int($0) != nil } ?? []
        return pids.contains { pid in
            guard let namespace = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/ns/mnt"),
                namespace != own,
                let table = try? String(contentsOfFile: "/proc/\(pid)/mountinfo", encoding: .utf8)
            else { return false }
            return table.split(separator: "\n").contains {
                $0.split(separator: " ").dropFirst(4).first == Substring(path)
            }
        }
    }

    /// Whether `path` (canonical, as the tests' temporary folders are) is a chunkcache FUSE mount now.
    static func isMounted(_ path: String) -> Bool { MountTable.isMounted(path, type: "fuse.chunkcache") }
}

/// What a shell command printed (stdout and stderr together) and its exit status.
struct ShellResult: CustomStringConvertible {
    var status: Int32
    var output: String
    var description: String { "exit \(status): \(output)" }
}

/// Runs `script` with `/bin/sh -c` in `directory` and waits for it.
@discardableResult
func shell(_ script: String, in directory: String? = nil) throws -> ShellResult {
    try ShellProcess(script, in: directory).wait()
}

/// `/bin/sh -c script`, started, its stdout and stderr together in a pipe.
///
/// Spawned with no signal blocked and every signal at its default: the test process's threads block some
/// (Dispatch's do), and a shell that inherits a blocked SIGCHLD waits forever in `wait`.
final class ShellProcess {
    private let pid: pid_t
    private let output: Int32
    /// What the shell printed so far.
    private var printed: [UInt8] = []

    init(_ script: String, in directory: String? = nil) throws {
        var pipe: [Int32] = [0, 0]
        guard Glibc.pipe(&pipe) == 0 else { throw MountFailed(description: "pipe: \(errno)") }
        // Only the child's stdout and stderr are the pipe: no other process started meanwhile holds its ends.
        _ = fcntl(pipe[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(pipe[1], F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, pipe[1], 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let words = ["/bin/sh", "-c", (directory.map { "cd '\($0)' && " } ?? "") + script]
        let environment = ["PATH=\(Capabilities.searchPath)", "LC_ALL=C"]
        let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, "/bin/sh", &actions, &attributes, argv, envp)
        close(pipe[1])
        guard spawned == 0 else {
            close(pipe[0])
            throw MountFailed(description: "posix_spawn /bin/sh: \(spawned)")
        }
        self.pid = pid
        self.output = pipe[0]
    }

    /// Reads what the shell prints until it ends, and waits for it.
    func wait() -> ShellResult {
        guard let result = wait(timeout: nil) else { fatalError("a wait with no timeout ended") }
        return result
    }

    /// Reads what the shell prints until the pipe ends (every process holding its write end closed it),
    /// and waits for the shell; `nil` when the pipe is still open after `timeout` seconds (then call again).
    func wait(timeout: Double?) -> ShellResult? {
        let deadline = timeout.map { Date().addingTimeInterval($0) }
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            if let deadline {
                var ready = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
                let left = Int32(max(0, deadline.timeIntervalSinceNow) * 1000)
                if poll(&ready, 1, left) == 0 { return nil }
            }
            let count = chunk.withUnsafeMutableBytes { Glibc.read(output, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            printed += chunk[0..<count]
        }
        close(output)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let exited = status & 0x7f == 0
        return ShellResult(
            status: exited ? (status >> 8) & 0xff : 128 + status & 0x7f,
            output: String(decoding: printed, as: UTF8.self))
    }
}

/// A mount that did not come up.
struct MountFailed: Error, CustomStringConvertible {
    var description: String
}
