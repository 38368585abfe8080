import ArgumentParser
import ChunkCache
import Foundation

/// The `chunkcache` command.
public struct ChunkCacheCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "chunkcache",
        abstract: "A content-addressed chunk cache for lazy, partial file downloads.",
        subcommands: [
            Init.self, Put.self, Import.self, Fetch.self, Versions.self, Stat.self, Domain.self, Ls.self, Changes.self, Anchor.self,
            Mark.self, Rm.self, Mv.self, Reimport.self, Pin.self, Unpin.self, Evict.self, Gc.self, Verify.self, Sweep.self, Bench.self,
        ])

    public init() {}

    /// Runs the command line `arguments` (without the program name) and returns the exit code:
    /// 0 on success, 1 on an engine error, 64 on a usage error. Errors print one line on stderr and, with
    /// `--json`, the error object on stdout.
    public static func main(arguments: [String]) async -> Int32 {
        let json = arguments.contains("--json")
        do {
            guard var reordered = hoistingGlobalOptions(arguments) else {
                report(code: .invalidArgument, message: "no command given; run `chunkcache --help` for the list", json: json)
                return 64
            }
            if reordered.first == "help" {
                // Help is text on stdout and exit 0, whatever --json says: it is read by people, not parsed.
                reordered = ["help"] + removingGlobalOptions(Array(reordered.dropFirst()))
            }
            if let name = reordered.first, !name.hasPrefix("-"), name != "help", !commandNames.contains(name) {
                report(code: .invalidArgument,
                       message: "unknown command '\(name)'; the commands are \(commandNames.sorted().joined(separator: ", "))",
                       json: json)
                return 64
            }
            var command = try parseAsRoot(reordered)
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
            return 0
        } catch let error as CacheError {
            report(code: error.code, message: error.message, json: json)
            return 1
        } catch {
            let exitCode = exitCode(for: error)
            if exitCode == .success {
                // --help and `help COMMAND`: the help text, also under --json (see `help` above).
                print(fullMessage(for: error))
                return 0
            }
            let message = self.message(for: error).split(separator: "\n").first.map(String.init) ?? "usage error"
            report(code: .invalidArgument, message: message + " (see `chunkcache --help`)", json: json)
            return exitCode == .validationFailure ? 64 : exitCode.rawValue
        }
    }

    /// Moves global options written before the command name (`chunkcache --store DIR --json stat`) after
    /// it, where ArgumentParser reads each subcommand's `GlobalOptions`. The command is the first argument
    /// that is neither a global option nor its value, known or not, so a bad command is the one blamed.
    /// Returns `nil` when there is no command at all.
    static func hoistingGlobalOptions(_ arguments: [String]) -> [String]? {
        var globals: [String] = []
        var index = 0
        while index < arguments.count {
            let width = globalOptionWidth(arguments[index])
            guard width > 0 else { break }
            globals += arguments[index..<min(index + width, arguments.count)]
            index += width
        }
        guard index < arguments.count else { return globals.isEmpty ? [] : nil }
        if arguments[index].hasPrefix("-") { return arguments }  // --help, --version, or a bad flag: let the parser say
        return [arguments[index]] + globals + arguments[(index + 1)...]
    }

    /// `arguments` without the global options and their values, wherever they stand.
    static func removingGlobalOptions(_ arguments: [String]) -> [String] {
        var kept: [String] = []
        var index = 0
        while index < arguments.count {
            let width = globalOptionWidth(arguments[index])
            if width == 0 { kept.append(arguments[index]) }
            index += max(width, 1)
        }
        return kept
    }

    /// How many arguments the global option starting at `argument` takes up (with its value); 0 for anything else.
    static func globalOptionWidth(_ argument: String) -> Int {
        if argument == "--store" || argument == "--tmp-grace" { return 2 }
        if argument == "--json" || argument.hasPrefix("--store=") || argument.hasPrefix("--tmp-grace=") { return 1 }
        return 0
    }

    static let commandNames = Set(configuration.subcommands.map {
        $0.configuration.commandName ?? String(describing: $0).lowercased()
    })

    static func report(code: CacheError.Code, message: String, json: Bool) {
        // One line always: a newline inside a name at fault is shown escaped.
        let line = message.replacingOccurrences(of: "\r", with: "\\r").replacingOccurrences(of: "\n", with: "\\n")
        FileHandle.standardError.write(Data("chunkcache: \(code.name): \(line)\n".utf8))
        if json {
            let object = JSON.object([
                ("error", .object([
                    ("code", .string(code.name)), ("domain", .string(code.domain)), ("rawValue", .int(Int64(code.rawValue))),
                    ("message", .string(message)),
                ]))
            ])
            print(object.rendered)
        }
    }
}
