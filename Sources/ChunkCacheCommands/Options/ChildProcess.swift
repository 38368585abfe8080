import ChunkCache
import FileIO
import Foundation

/// This executable run again as a child process, for work that may crash on a damaged store (`verify`'s walk):
/// the child prints JSON lines on stdout, the last one its result; the parent keeps only the last line and
/// the end of the child's stderr, so its memory stays bounded whatever the child prints.
struct ChildProcess {
    /// The child's last complete line: its result, or where it was when it died.
    var lastLine: String?
    /// The last line parsed as a JSON object, when it is the result (it has no `walking` key).
    var result: [String: Any]? {
        guard let lastLine, let object = Self.object(lastLine), object["walking"] == nil else { return nil }
        return object
    }
    /// How the child ended, as a phrase: `died of SIGSEGV (segmentation fault)`, `exited with status 3`.
    var ending: String
    /// The last line the child printed on stderr (LMDB prints its failed assertion there), at most 300 bytes.
    var errorTail: String

    /// Runs this executable with `arguments` and waits for it, reading its output on a thread of its own.
    static func run(_ arguments: [String]) async throws -> ChildProcess {
        let executable: String
        do {
            executable = try FileSystem.symlinkTarget("/proc/self/exe")
        } catch {
            throw CacheError(
                .featureUnsupported,
                "cannot find this program's own file in /proc/self/exe (\(error)) to run verify's walk in a child process; mount /proc"
            )
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw CacheError(.transient, "cannot start \(executable) for verify's walk (\(error)); retry")
        }
        return await withCheckedContinuation { continuation in
            // Blocking reads of the pipes, on threads of their own, never on Swift's cooperative pool.
            let stderrTail = TextBox()
            let stderrDone = DispatchGroup()
            stderrDone.enter()
            Thread {
                stderrTail.text = String(Self.lastLine(of: errors.fileHandleForReading).suffix(300))
                stderrDone.leave()
            }.start()
            Thread {
                let last = Self.lastLine(of: output.fileHandleForReading)
                process.waitUntilExit()
                stderrDone.wait()
                let ending =
                    process.terminationReason == .uncaughtSignal
                    ? "died of \(Self.signalName(process.terminationStatus))"
                    : "exited with status \(process.terminationStatus)"
                continuation.resume(
                    returning: ChildProcess(
                        lastLine: last.isEmpty ? nil : last, ending: ending, errorTail: stderrTail.text))
            }.start()
        }
    }

    /// Text one thread writes before a `DispatchGroup` says it is done, and another reads after.
    private final class TextBox: @unchecked Sendable {
        var text = ""
    }

    /// Reads `handle` to its end, returning its last non-empty line (memory: one read and one line).
    private static func lastLine(of handle: FileHandle) -> String {
        var pending = Data()
        var last = Data()
        while true {
            let data = handle.availableData
            if data.isEmpty { break }
            pending.append(data)
            if let end = pending.lastIndex(of: UInt8(ascii: "\n")) {
                let complete = pending[..<end]
                let start = complete.lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? complete.startIndex
                if start < end { last = Data(complete[start...]) }
                pending = Data(pending[(end + 1)...])
            }
        }
        if !pending.isEmpty { last = pending }
        return String(decoding: last, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A line parsed as a JSON object.
    static func object(_ line: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }

    /// Prints one JSON line on stdout at once (unbuffered), so it is out before a crash that may follow.
    static func line(_ json: JSON) {
        let text = json.rendered + "\n"
        // Best effort: a closed stdout leaves nobody to tell.
        try? Array(text.utf8).withUnsafeBytes { try FileDescriptor.standardOutput.writeAll($0) }
    }

    static func signalName(_ signal: Int32) -> String {
        let names: [Signal: String] = [
            .segmentationFault: "SIGSEGV (segmentation fault)", .busError: "SIGBUS (bus error)",
            .abort: "SIGABRT (an assertion failed)", .illegalInstruction: "SIGILL (a trap)",
            .trap: "SIGTRAP (a trap)", .arithmeticFault: "SIGFPE", .kill: "SIGKILL (killed)",
        ]
        return names[Signal(rawValue: signal)] ?? "signal \(signal)"
    }
}
