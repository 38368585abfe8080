import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What the machine can do, for gating tests with `.enabled(if:)`.
public enum Capabilities {
    /// Where tools are looked up: the usual bin and sbin directories, whatever the test's own `PATH` says.
    public static let searchPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

    /// The path of `tool` in ``searchPath``, or `nil` when it is not installed.
    public static func path(of tool: String) -> String? {
        searchPath.split(separator: ":").map { "\($0)/\(tool)" }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    /// Whether an ``XFSMount`` can be made: that needs root, `mkfs.xfs` (Debian: `xfsprogs`), `mount`, and a
    /// loop device (`/dev/loop-control`).
    public static var canMountXFS: Bool {
        getuid() == 0 && path(of: "mkfs.xfs") != nil && path(of: "mount") != nil
            && FileManager.default.fileExists(atPath: "/dev/loop-control")
    }
}

/// A command run by ``runTool(_:)`` that exited with a non-zero status.
public struct CommandFailed: Error, CustomStringConvertible {
    /// The tool and its arguments.
    public let command: [String]
    /// The exit status.
    public let status: Int32
    /// What it printed, stdout and stderr together.
    public let output: String

    /// The command line, its status, and its output, for the failure message.
    public var description: String { "\(command.joined(separator: " ")) exited with \(status): \(output)" }
}

/// Runs the tool `arguments[0]`, found in ``Capabilities/searchPath``, with the rest as its arguments, and waits
/// for it to end.
///
/// - Parameter arguments: The tool's name, then its arguments.
/// - Throws: ``CommandFailed`` with the tool's output unless it exits 0, or the error from starting it.
public func runTool(_ arguments: String...) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    process.environment = ["PATH": Capabilities.searchPath, "LC_ALL": "C"]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw CommandFailed(command: arguments, status: process.terminationStatus, output: text)
    }
}
