import ArgumentParser
import ChunkCache
import ChunkCacheMount
import FileIO
import Foundation
import FuseKit

/// `chunkcache mount`: a domain as a read-only file system (CONTRACT §13).
struct Mount: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Mount a domain read-only with FUSE: programs read its files lazily through the store.",
        discussion: """
            Folders and files come from the catalogue; a read fetches just its bytes (from the origin when \
            not cached). The mount follows every change to the domain, whoever makes it. Extended attributes: \
            user.chunkcache.state, .version, .cachedBytes; on a mount made with -o rw, `setfattr -n user.chunkcache.pin -v 1 FILE` pins \
            (0 unpins). Unmount with `fusermount3 -u MOUNTPOINT`, or SIGINT/SIGTERM to the mount's process. \
            Without --foreground the mount runs in the background once it is in place.
            """)

    @OptionGroup var global: GlobalOptions

    @Option(help: "The domain to mount.")
    var domain: String

    @Argument(help: "An existing empty folder to mount on.")
    var mountPoint: String

    @Flag(help: "Stay in the foreground until unmounted (default: return once mounted).")
    var foreground = false

    @Option(help: ArgumentHelp("Run `domain sync` this often (origin domains), e.g. 5m.", valueName: "duration"))
    var syncEvery: Duration?

    @Option(
        help: ArgumentHelp(
            "Download a file opened while not all cached whole, in the background, when it is at most this large; a larger one around its repeated misses (0: only what is read).",
            valueName: "size"))
    var fillBelow: ByteSize = ByteSize(argument: "256MiB")!

    @Flag(help: "Let other users read the mount (root, or user_allow_other in /etc/fuse.conf).")
    var allowOther = false

    @Option(
        name: .short,
        help: ArgumentHelp(
            "Mount options: ro (the default), rw (lets `setfattr` pin; writes are still refused), allow_other.",
            valueName: "options"))
    var options: String?

    /// Set in the environment of the background process the command starts.
    static let backgroundVariable = "CHUNKCACHE_MOUNT_BACKGROUND"

    func validate() throws {
        if let syncEvery, syncEvery.seconds < 1 { throw ValidationError("--sync-every must be at least 1s") }
        for option in parsedOptions where !["ro", "rw", "allow_other"].contains(option) {
            throw ValidationError("-o \(option) is not an option of chunkcache mount; it takes ro, rw, allow_other")
        }
    }

    private var parsedOptions: [String] {
        (options ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    func run() async throws {
        if !foreground {
            // What can be refused is refused here, where the user sees it; the background process mounts.
            try DomainMount.checkMountPoint(mountPoint)
            try await DomainMount.checkDomain(domain, of: try await global.openCache())
            return try startInBackground()
        }
        let inBackground = ProcessInfo.processInfo.environment[Self.backgroundVariable] != nil
        var mountOptions = MountOptions()
        mountOptions.allowOther = allowOther || parsedOptions.contains("allow_other")
        // Read-only by default; the last of `-o ro`/`-o rw` given wins.
        mountOptions.readOnly = parsedOptions.last(where: { $0 == "ro" || $0 == "rw" }) != "rw"
        mountOptions.fillBelow = fillBelow.bytes
        mountOptions.syncEvery = syncEvery.map { .milliseconds(Int64($0.seconds * 1000)) }
        let cache = try await global.openCache()
        let json = global.json
        let (domain, mountPoint) = (self.domain, self.mountPoint)
        try await DomainMount.serve(cache, domain: domain, at: mountPoint, options: mountOptions) {
            // In the background the command that started this process says it, and this one lets go of the
            // caller's streams: a caller that reads them to their end (`$(chunkcache mount …)`, `| tee`)
            // would otherwise wait until the unmount.
            guard !inBackground else { return Self.detachStandardStreams() }
            let line =
                json
                ? JSON.object([("mounted", .string(mountPoint)), ("domain", .string(domain))]).rendered
                : "mounted domain \(domain) at \(mountPoint)"
            // Written at once, not buffered: a script waits for this line before it reads the mount.
            FileHandle.standardOutput.write(Data((line + "\n").utf8))
        }
    }

    /// Points standard input, output and error at `/dev/null`, as a daemon does once it runs: nothing this
    /// process writes afterwards reaches the caller's terminal or pipes.
    private static func detachStandardStreams() {
        guard let null = try? FileDescriptor.open("/dev/null", .readWrite) else { return }
        for stream in [FileDescriptor.standardInput, .standardOutput, .standardError] {
            try? null.duplicate(as: stream)
        }
        if null.rawValue > FileDescriptor.standardError.rawValue { try? null.close() }
    }

    /// Runs this command again with `--foreground` as a background process, and returns once the mount is in
    /// place, or fails with the background process's status (it printed its error on the same stdout and
    /// stderr).
    private func startInBackground() throws {
        let process = try DetachedProcess.spawn(
            Array(CommandLine.arguments.dropFirst()) + ["--foreground"], setting: [Self.backgroundVariable: "1"],
            what: "the mount's background process", instead: "run it with --foreground")
        let canonical = (try? FileSystem.canonicalPath(mountPoint)) ?? mountPoint
        // Mounted once /proc/self/mountinfo lists the mount point as a chunkcache file system.
        var ending: SpawnedProcess.Termination?
        while true {
            do { ending = try process.termination() } catch { break }  // it cannot be waited for: it is gone
            if ending != nil { break }
            if MountTable.isMounted(canonical, type: "fuse.chunkcache") {
                return global.emit(
                    .object([
                        ("mounted", .string(mountPoint)), ("domain", .string(domain)), ("pid", .int(Int64(process.id))),
                    ]), summary: "mounted domain \(domain) at \(mountPoint) (process \(process.id))")
            }
            ThisProcess.sleepBlocking(for: Swift.Duration.milliseconds(10))
        }
        // Gone before the mount was in place: its exit status, or 1 when it had none to give.
        guard case .exited(let status) = ending, status != 0 else { throw ExitCode(1) }
        throw ExitCode(status)
    }
}
