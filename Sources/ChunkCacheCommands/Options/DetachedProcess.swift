import ChunkCache
import FileIO
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// This executable started again as a process of its own, which outlives the command that starts it: the
/// mount's background process, and the settler a command that downloaded leaves behind it.
enum DetachedProcess {
    /// Starts this executable with `arguments` and `variables` added to the environment, as the leader of a new
    /// session (so the terminal's Ctrl-C and hang-up never reach it), its standard input `/dev/null` and no
    /// other descriptor of this process's. Its standard output and error are this process's, or `/dev/null`
    /// with `quiet`.
    ///
    /// - Parameters:
    ///   - what: The process, as an error names it ("the mount's background process").
    ///   - instead: What to do when it cannot start ("run it with --foreground").
    static func spawn(
        _ arguments: [String], setting variables: [String: String] = [:], quiet: Bool = false, what: String,
        instead: String
    ) throws -> pid_t {
        let executable = try FileSystem.symlinkTarget("/proc/self/exe")
        var environment = ProcessInfo.processInfo.environment
        environment.merge(variables) { $1 }
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        if quiet {
            posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0)
        }
        // Nothing else of this process's: a pipe or socket its own caller waits on would stay open. (This
        // process ends soon after, so its own descriptors may all close on exec.)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [] {
            if let fd = Int32(name), fd > STDERR_FILENO { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // glibc's POSIX_SPAWN_SETSID, which its header shows only to _GNU_SOURCE.
        posix_spawnattr_setflags(&attributes, 0x80)
        var pid = pid_t()
        let failed = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard failed == 0 else {
            throw CacheError(
                .invalidArgument, "cannot start \(what) (\(String(cString: strerror(failed)))); \(instead)")
        }
        return pid
    }
}

/// What a command that downloaded does with the chunks it left unsettled (CONTRACT §10), from
/// `CHUNKCACHE_SETTLE`: `background` (the default) starts `chunkcache settle` as a process of its own, so the
/// command ends as soon as its reader has its bytes; `wait` settles before the command ends; `off` leaves
/// them to the next process that settles.
enum SettleBehind {
    static let variable = "CHUNKCACHE_SETTLE"

    /// Settles, or starts a settler for, what `cache` downloaded in this process.
    static func afterDownloads(_ cache: ChunkCache) async throws {
        guard cache.downloadedFills else { return }
        switch ProcessInfo.processInfo.environment[variable] ?? "background" {
        case "off":
            return
        case "wait":
            _ = try await cache.settle()
        default:
            // A settler that cannot start leaves the fills to the next one: nothing is lost.
            _ = try? DetachedProcess.spawn(
                ["--store", cache.path, "settle", "--unless-settling"], quiet: true, what: "the settler",
                instead: "run `chunkcache settle`")
        }
    }
}
