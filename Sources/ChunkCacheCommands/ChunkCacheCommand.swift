import ArgumentParser
import ChunkCache
import Foundation

/// The `chunkcache` command.
public struct ChunkCacheCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "chunkcache",
        abstract: "A content-addressed chunk cache for lazy, partial file downloads.",
        subcommands: [Init.self, Put.self, Import.self, Fetch.self, Versions.self, Stat.self, Verify.self, Sweep.self])

    public init() {}

    /// Runs the command line `arguments` (without the program name) and returns the exit code:
    /// 0 on success, 1 on an engine error, 64 on a usage error. Errors print one line on stderr and, with
    /// `--json`, the error object on stdout.
    public static func main(arguments: [String]) async -> Int32 {
        let json = arguments.contains("--json")
        do {
            var command = try parseAsRoot(hoistingGlobalOptions(arguments))
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
                print(fullMessage(for: error))
                return 0
            }
            let message = self.message(for: error).split(separator: "\n").first.map(String.init) ?? "usage error"
            report(code: .invalidArgument, message: message + " (see `chunkcache --help`)", json: json)
            return exitCode == .validationFailure ? 64 : exitCode.rawValue
        }
    }

    /// Moves global options written before the command name (`chunkcache --store DIR --json stat`) after
    /// it, where ArgumentParser reads each subcommand's `GlobalOptions`.
    static func hoistingGlobalOptions(_ arguments: [String]) -> [String] {
        let names = Set(configuration.subcommands.compactMap { $0.configuration.commandName ?? String(describing: $0).lowercased() })
        guard let commandIndex = arguments.firstIndex(where: { names.contains($0) }) else { return arguments }
        var leading: [String] = []
        var rest: [String] = []
        var index = 0
        while index < commandIndex {
            let argument = arguments[index]
            if (argument == "--store" || argument == "--tmp-grace") && index + 1 < commandIndex {
                leading += [argument, arguments[index + 1]]
                index += 2
                continue
            }
            if argument == "--json" || argument.hasPrefix("--store=") || argument.hasPrefix("--tmp-grace=") {
                leading.append(argument)
            } else {
                rest.append(argument)
            }
            index += 1
        }
        return rest + [arguments[commandIndex]] + leading + arguments[(commandIndex + 1)...]
    }

    static func report(code: CacheError.Code, message: String, json: Bool) {
        FileHandle.standardError.write(Data("chunkcache: \(code.name): \(message)\n".utf8))
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
