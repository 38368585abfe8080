import ArgumentParser
import ChunkCache
import FileIO
import Foundation

/// `trace ls|export|import|rm|on|off`: the traces learned prefetch keeps (CONTRACT §15).
struct Trace: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List, share or remove the traces learned prefetch keeps, or turn it on or off for a domain.",
        subcommands: [List.self, Export.self, Import.self, Remove.self, On.self, Off.self])

    // As in `Domain`: the root moves global options to just after `trace`; the subcommands read them.
    @OptionGroup var global: GlobalOptions

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ls", abstract: "List the learned traces: each one's leader, items and bytes.")

        @OptionGroup var global: GlobalOptions
        @Option(help: "Only this domain's traces.") var domain: String?

        func run() async throws {
            let cache = try await global.openCache()
            let traces = try await cache.traces(in: domain)
            global.emit(
                .object([("traces", .array(traces.map(\.json)))]),
                summary: traces.isEmpty
                    ? "no traces" : traces.map(\.summary).joined(separator: "\n"))
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "export",
            abstract: "Write a domain's traces as JSON, for `trace import` into another store of the same origin.")

        @OptionGroup var global: GlobalOptions
        @Option(help: "The domain.") var domain: String
        @Option(help: "The file to write (default: standard output).") var out: String?

        func run() async throws {
            let cache = try await global.openCache()
            let data = try await cache.exportTraces(of: domain)
            guard let out else {
                FileHandle.standardOutput.write(data + Data("\n".utf8))
                return
            }
            do {
                try data.write(to: URL(fileURLWithPath: out), options: .atomic)
            } catch {
                throw CacheError(
                    .invalidArgument, "cannot write \(out) (\(error.localizedDescription)); give another --out")
            }
            let count = try await cache.traces(in: domain).count
            global.emit(
                .object([("domain", .string(domain)), ("exported", .int(Int64(count))), ("out", .string(out))]),
                summary: "exported \(count) traces of \(domain) to \(out)")
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Take in traces `trace export` wrote (from this or another store of the same origin).")

        @OptionGroup var global: GlobalOptions
        @Option(help: "The domain to take them into (an origin domain).") var domain: String
        @Argument(help: "The file `trace export` wrote.") var file: String

        /// The largest trace file taken in, read whole: far above a real export (a Django start's trace is a
        /// few KB), far below what would strain memory.
        static let maxFileBytes = 256 << 20

        func run() async throws {
            let bytes: [UInt8]
            do {
                bytes = try FileSystem.contents(of: file, limit: Self.maxFileBytes)
            } catch {
                throw CacheError(.invalidArgument, "cannot read \(file) (\(error)); give the file `trace export` wrote")
            }
            guard bytes.count <= Self.maxFileBytes else {
                throw CacheError(
                    .invalidArgument,
                    "\(file) is larger than \(formatSize(Int64(Self.maxFileBytes))), the most a trace file holds: give the file `trace export` wrote"
                )
            }
            let cache = try await global.openCache()
            let count = try await cache.importTraces(Data(bytes), into: domain)
            global.emit(
                .object([("domain", .string(domain)), ("imported", .int(Int64(count)))]),
                summary: "imported \(count) traces into \(domain)")
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rm",
            abstract: "Remove traces: those of the given leaders, or with --all every one of the domain.")

        @OptionGroup var global: GlobalOptions
        @Option(help: "The domain.") var domain: String
        @Flag(help: "Remove every trace of the domain.") var all = false
        @Argument(help: "Leaders (the items whose open starts a trace), as `trace ls` names them.") var leaders:
            [String] = []

        func validate() throws {
            guard all != !leaders.isEmpty else {
                throw ValidationError("give the leaders of the traces to remove, or --all, not both or neither")
            }
        }

        func run() async throws {
            let cache = try await global.openCache()
            let removed = try await cache.removeTraces(of: domain, leaders: all ? nil : leaders)
            global.emit(
                .object([("domain", .string(domain)), ("removed", .int(Int64(removed)))]),
                summary: "removed \(removed) traces of \(domain)")
        }
    }

    struct On: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "on", abstract: "Learn traces and prefetch what they predict for a domain (the default).")

        @OptionGroup var global: GlobalOptions
        @Option(help: "The domain.") var domain: String

        func run() async throws { try await switchTraces(true, domain, global) }
    }

    struct Off: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "off", abstract: "Neither learn traces nor prefetch for a domain; its traces are kept.")

        @OptionGroup var global: GlobalOptions
        @Option(help: "The domain.") var domain: String

        func run() async throws { try await switchTraces(false, domain, global) }
    }
}

private func switchTraces(_ enabled: Bool, _ domain: String, _ global: GlobalOptions) async throws {
    let cache = try await global.openCache()
    try await cache.setLearnedPrefetch(enabled, for: domain)
    global.emit(
        .object([("domain", .string(domain)), ("learnedPrefetch", .bool(enabled))]),
        summary: "learned prefetch is \(enabled ? "on" : "off") for \(domain)")
}

extension TraceSummary {
    var json: JSON {
        .object([
            ("domain", .string(domain)), ("leader", .string(leader)), ("items", .int(Int64(items))),
            ("describedBytes", .int(describedBytes)), ("bytes", .int(Int64(bytes))), ("runs", .int(Int64(runs))),
            ("uses", .int(Int64(uses))), ("usedAt", .string(usedAt.formatted(.iso8601))),
        ])
    }

    var summary: String {
        "\(domain): \(leader): \(items) items, \(formatSize(describedBytes)) predicted in \(formatSize(Int64(bytes))); \(runs) runs, \(uses) uses"
    }
}
