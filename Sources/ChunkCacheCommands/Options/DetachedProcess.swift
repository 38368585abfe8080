import ChunkCache
import FileIO
import Foundation

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
    ) throws -> SpawnedProcess {
        let executable = try FileSystem.symlinkTarget("/proc/self/exe")
        var environment = ProcessInfo.processInfo.environment
        environment.merge(variables) { $1 }
        // Nothing else of this process's: a pipe or socket its own caller waits on would stay open. (This
        // process ends soon after, so its own descriptors may all close on exec.)
        var options: SpawnedProcess.Options = [.newSession, .inputFromNullDevice, .inheritStandardStreamsOnly]
        if quiet { options.insert(.outputToNullDevice) }
        do {
            return try SpawnedProcess.spawn(
                executable, arguments: arguments, environment: environment, options: options)
        } catch {
            throw CacheError(.invalidArgument, "cannot start \(what) (\(error)); \(instead)")
        }
    }
}
