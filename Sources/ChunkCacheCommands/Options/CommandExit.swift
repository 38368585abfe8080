import ArgumentParser
import ChunkCache
import Foundation

// How a command line of a chunkcache program ends, shared by `chunkcache` and `chunkcache-bench`: its exit
// code, and what an error prints.
extension ParsableCommand {
    /// Runs `body`, a command line parsed and run under this root command, and returns the process's exit code:
    /// 0 on success, 1 on an engine error (`CacheError`), 64 on a usage error. An error prints one line on stderr
    /// and, with `json`, the error object on stdout; `--help` and `help COMMAND` print the help text, exit 0.
    package static func exitCode(json: Bool, running body: () async throws -> Void) async -> Int32 {
        do {
            try await body()
            return 0
        } catch let error as CacheError {
            report(code: error.code, message: error.message, json: json)
            return 1
        } catch let error as ChunkCacheCommand.CommandLineError {
            report(code: .invalidArgument, message: error.message, json: json)
            return 64
        } catch {
            let exitCode = exitCode(for: error)
            if exitCode == .success {
                // The help text, also under --json: it is read by people, not parsed.
                print(fullMessage(for: error))
                return 0
            }
            let message = self.message(for: error).split(separator: "\n").first.map(String.init) ?? "usage error"
            report(code: .invalidArgument, message: message + " (see `\(programName) --help`)", json: json)
            return exitCode == .validationFailure ? 64 : exitCode.rawValue
        }
    }

    /// The program's name, as errors and help name it: the root command's.
    static var programName: String { configuration.commandName ?? "chunkcache" }

    /// Prints an error: one line on stderr (`PROGRAM: code: message`), and with `json` the error object on stdout.
    static func report(code: CacheError.Code, message: String, json: Bool) {
        // One line always: a newline inside a name at fault is shown escaped.
        let line = message.replacingOccurrences(of: "\r", with: "\\r").replacingOccurrences(of: "\n", with: "\\n")
        FileHandle.standardError.write(Data("\(programName): \(code.name): \(line)\n".utf8))
        if json { print(errorJSON(code: code, message: message).rendered) }
    }

    /// The error object `--json` prints: `{"error": {code, domain, rawValue, message}}`.
    static func errorJSON(code: CacheError.Code, message: String) -> JSON {
        .object([
            (
                "error",
                .object([
                    ("code", .string(code.name)), ("domain", .string(code.domain)),
                    ("rawValue", .int(Int64(code.rawValue))), ("message", .string(message)),
                ])
            )
        ])
    }
}
