#if canImport(Glibc)
import Glibc
#endif

/// A process this one started, to wait for or to leave running.
public struct SpawnedProcess: Sendable, Hashable {
    /// The process's id.
    public let id: Int32

    /// How a process ended.
    public enum Termination: Sendable, Hashable {
        /// It exited with this status (0 to 255).
        case exited(Int32)
        /// It died of this signal.
        case signalled(Signal)
    }

    /// How ``spawn(_:arguments:environment:options:)`` starts the process.
    public struct Options: OptionSet, Sendable {
        /// The flag bits.
        public let rawValue: UInt8
        /// The options whose bits are `rawValue`.
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        /// Find the executable in the folders of `PATH` when its name has no `/` (`posix_spawnp`).
        public static let searchPath = Options(rawValue: 1 << 0)
        /// Make the process the leader of a new session (`setsid`), so the terminal's Ctrl-C and hang-up
        /// never reach it.
        public static let newSession = Options(rawValue: 1 << 1)
        /// Its standard input is `/dev/null`.
        public static let inputFromNullDevice = Options(rawValue: 1 << 2)
        /// Its standard output and error are `/dev/null`.
        public static let outputToNullDevice = Options(rawValue: 1 << 3)
        /// It inherits no descriptor of this process's but standard input, output and error: every other one
        /// open now is marked close-on-exec, in this process too (for a process that ends soon after, or
        /// opens its descriptors close-on-exec anyway, as ``FileDescriptor/open(_:_:mode:retryOnInterrupt:)``
        /// does). A pipe or socket this process's own caller waits on would otherwise stay open.
        public static let inheritStandardStreamsOnly = Options(rawValue: 1 << 4)
    }

    /// Starts `executable` with `arguments` (its `argv` is the executable, then `arguments`).
    ///
    /// - Parameters:
    ///   - environment: Its environment variables; `nil` for this process's own.
    /// - Throws: ``Errno``: `ENOENT` when `executable` is missing (or, with ``Options/searchPath``, in no folder
    ///   of `PATH`), `EACCES` when it may not be run, `EAGAIN` when no process can be made.
    ///
    /// Uses the `posix_spawn(3)` library call (`posix_spawnp` with ``Options/searchPath``), with `fcntl(2)`
    /// and `F_SETFD` for ``Options/inheritStandardStreamsOnly``.
    public static func spawn(
        _ executable: String, arguments: [String], environment: [String: String]? = nil, options: Options = []
    ) throws(Errno) -> SpawnedProcess {
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?]? = environment.map {
            $0.map { strdup("\($0.key)=\($0.value)") } + [nil]
        }
        defer { for pointer in argv + (envp ?? []) { free(pointer) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if options.contains(.inputFromNullDevice) {
            posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        }
        if options.contains(.outputToNullDevice) {
            posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0)
        }
        if options.contains(.inheritStandardStreamsOnly) { closeOnExecAllButStandardStreams() }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // glibc's POSIX_SPAWN_SETSID, which its header shows only to _GNU_SOURCE.
        if options.contains(.newSession) { posix_spawnattr_setflags(&attributes, 0x80) }
        var pid = pid_t()
        func start(environment: UnsafePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
            options.contains(.searchPath)
                ? posix_spawnp(&pid, executable, &actions, &attributes, argv, environment)
                : posix_spawn(&pid, executable, &actions, &attributes, argv, environment)
        }
        // posix_spawn returns its error rather than setting errno.
        let failed = envp.map { start(environment: $0) } ?? start(environment: environ)
        guard failed == 0 else { throw Errno(rawValue: failed) }
        return SpawnedProcess(id: pid)
    }

    /// Marks every descriptor open now but 0, 1 and 2 close-on-exec, as `/proc/self/fd` lists them.
    private static func closeOnExecAllButStandardStreams() {
        var descriptors: [Int32] = []
        // The listing's own descriptor is among the names; it is closed by the time its flag is set, harmlessly.
        try? FileSystem.forEachEntry(in: "/proc/self/fd") { entry in
            if let fd = Int32(entry.name), fd > STDERR_FILENO { descriptors.append(fd) }
        }
        for fd in descriptors { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    }

    /// Waits until the process ends, and reaps it.
    ///
    /// - Throws: ``Errno``: `ECHILD` when it is not a child of this process, or was reaped already.
    ///
    /// Uses the `waitpid(2)` system call.
    public func wait() throws(Errno) -> Termination {
        var status: Int32 = 0
        _ = try valueOrErrno { waitpid(id, &status, 0) }
        return Self.ending(ofStatus: status)
    }

    /// How the process ended, reaping it, or `nil` while it runs; never waits.
    ///
    /// - Throws: ``Errno``: `ECHILD` when it is not a child of this process, or was reaped already.
    ///
    /// Uses the `waitpid(2)` system call with `WNOHANG`.
    public func termination() throws(Errno) -> Termination? {
        var status: Int32 = 0
        guard try valueOrErrno({ waitpid(id, &status, WNOHANG) }) == id else { return nil }
        return Self.ending(ofStatus: status)
    }

    /// The ending a `waitpid` status tells: `WIFEXITED` and `WEXITSTATUS`, `WTERMSIG`, macros Swift does not
    /// import. Without `WUNTRACED` a stopped child is not reported, so a status that is not an exit is a
    /// death by signal.
    private static func ending(ofStatus status: Int32) -> Termination {
        let signal = status & 0x7f
        return signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(Signal(rawValue: signal))
    }
}

extension ThisProcess {
    /// This process's id, from `getpid(2)`: part of temporary files' names, so two processes never make the same.
    public static var id: Int32 { getpid() }

    /// The real user id of the process.
    ///
    /// Uses the `getuid(2)` system call.
    public static var userID: UInt32 { getuid() }

    /// The real group id of the process.
    ///
    /// Uses the `getgid(2)` system call.
    public static var groupID: UInt32 { getgid() }

    /// Names the calling thread `name` for `ps -L`, `top -H` and debuggers; Linux keeps the first 15 bytes.
    /// Best effort: a thread left unnamed still works.
    ///
    /// Foundation's `Thread.name` stays inside Foundation on Linux and `pthread_setname_np` needs
    /// `_GNU_SOURCE`, so this writes the kernel's copy, which proc(5) allows: "A thread may modify its comm
    /// value". Uses the `open(2)` and `write(2)` system calls on `/proc/thread-self/comm`.
    public static func nameCurrentThread(_ name: String) {
        guard let comm = try? FileDescriptor.open("/proc/thread-self/comm", O_WRONLY) else { return }
        _ = try? comm.closeAfter {
            try Array(name.utf8).withUnsafeBytes { try comm.writeAll($0) }
        }
    }
}
