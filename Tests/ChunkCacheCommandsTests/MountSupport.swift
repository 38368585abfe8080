import Foundation
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
        return process.wait(timeout: 30)
    }

    /// Whether `path` (canonical, as the tests' temporary folders are) is a chunkcache FUSE mount now
    /// (`/proc/self/mountinfo`).
    static func isMounted(_ path: String) -> Bool {
        guard let table = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return false }
        return table.split(separator: "\n").contains { line in
            let fields = line.split(separator: " ")
            guard fields.count > 4, let separator = fields.firstIndex(of: "-"), separator + 1 < fields.count else {
                return false
            }
            return fields[4] == path && fields[separator + 1] == "fuse.chunkcache"
        }
    }
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
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", script]
    process.environment = ["PATH": Capabilities.searchPath, "LC_ALL": "C"]
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return ShellResult(status: process.terminationStatus, output: text)
}

/// A mount that did not come up.
struct MountFailed: Error, CustomStringConvertible {
    var description: String
}
