import ArgumentParser
import ChunkCache
import FileIO
import Foundation

/// The `chunkcache` command.
public struct ChunkCacheCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "chunkcache",
        abstract: "A content-addressed chunk cache for lazy, partial file downloads.",
        version: version,
        subcommands: [
            Init.self, Put.self, Import.self, Fetch.self, Versions.self, Stat.self, Domain.self, Ls.self, Changes.self,
            Anchor.self,
            Mark.self, Rm.self, Mv.self, Reimport.self, Pin.self, Unpin.self, Evict.self, Gc.self, Verify.self,
            Recover.self, Sweep.self, Settle.self, Mount.self, Trace.self,
            VerifyWalk.self,
        ])

    /// What `chunkcache --version` prints.
    public static let version = "0.20.0"

    public init() {}

    /// Runs the command line `arguments` (without the program name) and returns the exit code:
    /// 0 on success, 1 on an engine error, 64 on a usage error. Errors print one line on stderr and, with
    /// `--json`, the error object on stdout.
    public static func main(arguments: [String]) async -> Int32 {
        let json = takesJSONFlag(arguments)
        if let reply = versionReply(to: arguments) {
            print(reply)
            return 0
        }
        return await exitCode(json: json) {
            var (command, reordered) = try parsedCommandLine(arguments)
            // verify's walk must die of its signal: verify reports that as damage, naming the signal.
            if !(command is VerifyWalk) { reportFatalSignals(arguments: reordered, json: json) }
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        }
    }

    /// What `chunkcache [GLOBAL OPTIONS] --version` prints (`{"version"}` with `--json`), or `nil` for any other
    /// command line. Answered before the command tree is parsed: nothing is set up, no store is opened. Only a
    /// command line of global options and `--version` asks for the version; `--version` anywhere else is a
    /// command's option (`put --version V`) or a usage error, which the full parse names.
    public static func versionReply(to arguments: [String]) -> String? {
        let rest = removingGlobalOptions(arguments)
        guard !rest.isEmpty, rest.allSatisfy({ $0 == "--version" }) else { return nil }
        return takesJSONFlag(arguments) ? JSON.object([("version", .string(version))]).rendered : version
    }

    /// Whether `arguments` hold `--json` as a flag, not as the value of `--store` or `--tmp-grace`.
    package static func takesJSONFlag(_ arguments: [String]) -> Bool {
        var index = 0
        while index < arguments.count {
            if arguments[index] == "--json" { return true }
            index += max(globalOptionWidth(arguments[index]), 1)
        }
        return false
    }

    /// A command line that names no command, or one chunkcache lacks: a usage error (exit 64).
    struct CommandLineError: Error {
        let message: String
    }

    /// The command `arguments` name, parsed as `main` runs it, and the arguments in the order it parsed them
    /// (global options after the command's name). Throws `CommandLineError` for a missing or unknown command and
    /// ArgumentParser's error for the rest: usage errors, `--help`, and `--version` when `arguments` are
    /// `versionReply`'s.
    package static func parsedCommandLine(_ arguments: [String]) throws -> (
        command: any ParsableCommand, arguments: [String]
    ) {
        guard var reordered = hoistingGlobalOptions(arguments) else {
            throw CommandLineError(message: "no command given; run `chunkcache --help` for the list")
        }
        if reordered.first == "help" {
            // Help is text on stdout and exit 0, whatever --json says: it is read by people, not parsed.
            reordered = ["help"] + removingGlobalOptions(Array(reordered.dropFirst()))
        }
        if let name = reordered.first, !name.hasPrefix("-"), name != "help", !commandNames.contains(name) {
            throw CommandLineError(
                message:
                    "unknown command '\(name)'; the commands are \(shownCommandNames.sorted().joined(separator: ", "))"
            )
        }
        return (try parsed(reordered), reordered)
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

    static let commandNames = Set(configuration.subcommands.map { $0._commandName })

    /// The commands without subcommands, by name.
    static let leafCommands = Dictionary(
        uniqueKeysWithValues: configuration.subcommands.filter { $0.configuration.subcommands.isEmpty }.map {
            ($0._commandName, $0)
        })

    /// The command `arguments` name, parsed. A command without subcommands is parsed on its own first:
    /// ArgumentParser builds the arguments of every command it passes through by reflection, and the whole
    /// tree cost about 3 ms of a 10 ms `fetch`. What that refuses (a usage error, `--help`) is parsed again
    /// through the whole tree, so messages and help name `chunkcache` as always.
    static func parsed(_ arguments: [String]) throws -> any ParsableCommand {
        // Only the command itself counts: `--help` parses into ArgumentParser's help command, which would
        // name the leaf as the program.
        if let name = arguments.first, let leaf = leafCommands[name],
            let command = try? leaf.parseAsRoot(Array(arguments.dropFirst())), type(of: command) == leaf
        {
            return command
        }
        do {
            return try parseAsRoot(arguments)
        } catch let error where isVersionRequest(error) && versionReply(to: arguments) == nil {
            // ArgumentParser takes a command line that fails to parse and holds `--version` anywhere
            // (`put --domain P FILE --version v1`, ITEM forgotten) as a request for the version. The same tree
            // without the version flag names what is really wrong with a command's arguments.
            guard let name = arguments.first, commandNames.contains(name) || name == "help" else {
                throw CommandLineError(
                    message: "--version takes no command or other arguments: run `chunkcache --version` alone")
            }
            return try WithoutVersionFlag.parseAsRoot(arguments)
        }
    }

    /// Whether ArgumentParser's `error` is its answer to `--version`.
    static func isVersionRequest(_ error: any Error) -> Bool {
        exitCode(for: error) == .success && fullMessage(for: error) == version
    }

    /// The command tree without `--version`, to parse a command line ArgumentParser would otherwise answer
    /// with the version (see `parsed`).
    struct WithoutVersionFlag: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: ChunkCacheCommand.configuration.commandName,
            subcommands: ChunkCacheCommand.configuration.subcommands)
    }

    /// The commands help lists (not `verify-walk`, which `verify` runs in its child process).
    static let shownCommandNames = Set(
        configuration.subcommands.filter { $0.configuration.shouldDisplay }.map { $0._commandName })

    /// Makes a fault end the command with exit status 1 and a `corruptData` error instead of a crash. LMDB
    /// trusts the pages of its memory-mapped file, so a damaged store can fault inside it (SIGSEGV, SIGBUS, or
    /// SIGABRT from an assertion); the user then learns what to do rather than seeing the shell report a crash.
    /// A last resort: `verify` isolates its walk in a child process and `recover` reads without LMDB.
    static func reportFatalSignals(arguments: [String], json: Bool) {
        let environment = ProcessInfo.processInfo.environment
        var store = environment["CHUNKCACHE_STORE"].flatMap { $0.isEmpty ? nil : $0 }
        if let index = arguments.firstIndex(of: "--store"), index + 1 < arguments.count { store = arguments[index + 1] }
        if let option = arguments.first(where: { $0.hasPrefix("--store=") }) {
            store = String(option.dropFirst("--store=".count))
        }
        let option = store.map { " --store \($0)" } ?? ""
        let message =
            "a fatal signal (SIGSEGV, SIGBUS or SIGABRT) stopped this command, most likely at a damaged page of the store"
            + (store.map { " at \($0)" } ?? "")
            + ", which LMDB reads without checks; run `chunkcache\(option) verify` to check the store, "
            + "then `chunkcache\(option) recover --to NEWSTORE` to salvage what can be read into a new store"
        let line =
            "chunkcache: \(CacheError.Code.corruptData.name): " + message.replacingOccurrences(of: "\n", with: "\\n")
            + "\n"
        let object = json ? errorJSON(code: .corruptData, message: message).rendered + "\n" : nil
        // Best effort: without the handler a fault is a crash, as before.
        try? FatalSignals.reportAndExit(stderrText: line, stdoutText: object)
    }
}

/// A command that runs by its type's name in lower case (`Fetch` is `fetch`) unless its configuration names it.
/// ArgumentParser's own default takes the name from `String(describing:)` of the type, whose casts to the printing
/// protocols each search every protocol conformance in the binary; it names every command of the tree before
/// parsing, so with 22 commands that was 2-3 ms of each command's start (issue 20). Each name is one word.
protocol NamedAfterItsType: ParsableCommand {}

extension NamedAfterItsType {
    static var _commandName: String {
        configuration.commandName ?? _typeName(Self.self, qualified: false).lowercased()
    }
}

extension Init: NamedAfterItsType {}
extension Put: NamedAfterItsType {}
extension Import: NamedAfterItsType {}
extension Fetch: NamedAfterItsType {}
extension Versions: NamedAfterItsType {}
extension Stat: NamedAfterItsType {}
extension Domain: NamedAfterItsType {}
extension Ls: NamedAfterItsType {}
extension Changes: NamedAfterItsType {}
extension Anchor: NamedAfterItsType {}
extension Mark: NamedAfterItsType {}
extension Rm: NamedAfterItsType {}
extension Mv: NamedAfterItsType {}
extension Reimport: NamedAfterItsType {}
extension Pin: NamedAfterItsType {}
extension Unpin: NamedAfterItsType {}
extension Evict: NamedAfterItsType {}
extension Gc: NamedAfterItsType {}
extension Verify: NamedAfterItsType {}
extension Recover: NamedAfterItsType {}
extension Sweep: NamedAfterItsType {}
extension Settle: NamedAfterItsType {}
extension Mount: NamedAfterItsType {}
