import ArgumentParser
import ChunkCache

/// `domain add|set|ls|rm`: a domain's origin and settings (CONTRACT §10).
struct Domain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Add, change, list or remove domains and their origins.",
        subcommands: [Add.self, Change.self, List.self, Remove.self, Sync.self])

    // As in `Bench`: the root moves global options to just after `domain`, before `add`; the subcommands'
    // `global`, under the same name, reads them.
    @OptionGroup var global: GlobalOptions

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add",
            abstract:
                "Create a domain, with an origin to read its items from or without (the store is then its only copy).")

        @OptionGroup var global: GlobalOptions
        @Argument(help: "The domain name.") var name: String
        @OptionGroup var settings: DomainSettings

        func run() async throws {
            let cache = try await global.openCache()
            let info = try await cache.addDomain(
                name, origin: try settings.parsedOrigin(), headers: try settings.parsedHeaders() ?? [],
                pipelineDepth: settings.pipelineDepth ?? DomainInfo.defaultPipelineDepth,
                readAhead: settings.readAhead?.bytes ?? DomainInfo.defaultReadAhead, readTimeout: settings.timeout)
            global.emit(info.json, summary: "added domain " + info.summary)
        }
    }

    struct Change: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Change a domain's settings: those given change, the others stay (--header replaces all headers)."
        )

        @OptionGroup var global: GlobalOptions
        @Argument(help: "The domain name.") var name: String
        @OptionGroup var settings: DomainSettings
        @Option(
            name: .customLong("keep-changes"),
            help: "Change records the log keeps (default 1000000); anchors older than those kept expire.")
        var keepChanges: UInt64?
        @Option(name: .customLong("keep-for"), help: "How long change records are kept (default 30d).")
        var keepFor: Duration?

        func validate() throws {
            if keepChanges == 0 { throw ValidationError("--keep-changes must be at least 1") }
            if let keepFor, keepFor.seconds <= 0 { throw ValidationError("--keep-for must be longer than 0") }
        }

        func run() async throws {
            let cache = try await global.openCache()
            var history: ChangeHistory?
            if keepChanges != nil || keepFor != nil {
                let current = try await cache.domains().first { $0.name == name }?.changeHistory ?? .standard
                history = ChangeHistory(
                    changes: keepChanges ?? current.changes, seconds: keepFor?.seconds ?? current.seconds)
            }
            let info = try await cache.setDomain(
                name, origin: try settings.parsedOrigin(), headers: try settings.parsedHeaders(),
                pipelineDepth: settings.pipelineDepth, readAhead: settings.readAhead?.bytes,
                readTimeout: settings.timeout,
                changeHistory: history)
            global.emit(info.json, summary: "domain " + info.summary)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "ls", abstract: "List the domains, one a line.")

        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let cache = try await global.openCache()
            let domains = try await cache.domains()
            global.emit(
                .object([("domains", .array(domains.map(\.json)))]),
                summary: domains.isEmpty ? "no domains" : domains.map(\.summary).joined(separator: "\n"))
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rm",
            abstract: "Remove a domain with all its items and versions; chunks no other domain uses are freed.")

        @OptionGroup var global: GlobalOptions
        @Argument(help: "The domain name.") var name: String

        func run() async throws {
            let cache = try await global.openCache()
            try await cache.removeDomain(name)
            global.emit(.object([("removed", .string(name))]), summary: "removed domain \(name)")
        }
    }
}

extension Domain {
    struct Sync: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sync",
            abstract:
                "List the domain's origin and apply what changed there: new files, new versions, deletions (all or nothing)."
        )

        @OptionGroup var global: GlobalOptions
        @Argument(help: "The domain name.") var name: String

        func run() async throws {
            let cache = try await global.openCache()
            let result = try await cache.syncDomain(name)
            global.emit(
                .object([
                    ("domain", .string(name)), ("created", .int(Int64(result.created))),
                    ("modified", .int(Int64(result.modified))),
                    ("deleted", .int(Int64(result.deleted))), ("unchanged", .int(Int64(result.unchanged))),
                    ("domainVersion", result.domainVersion.json),
                ]),
                summary:
                    "\(name): \(result.created) created, \(result.modified) modified, \(result.deleted) deleted, \(result.unchanged) unchanged; domain version \(result.domainVersion)"
            )
        }
    }
}

/// The settings `domain add` and `domain set` take. They are checked while the command line is parsed, so
/// a bad one is a usage error (exit 64) and nothing is opened.
struct DomainSettings: ParsableArguments {
    @Option(
        name: .customLong("origin"),
        help: ArgumentHelp(
            "Where the items come from: http[s]://host[:port]/base/ or s3://BUCKET/PREFIX.", valueName: "url"))
    var originURL: String?

    @Option(help: ArgumentHelp("For an s3:// origin: the service's http[s]://host[:port].", valueName: "url"))
    var endpoint: String?

    @Option(
        help: ArgumentHelp("For an s3:// origin: the region to sign requests for, e.g. us-east-1.", valueName: "region")
    )
    var region: String?

    @Option(
        name: .customLong("header"),
        help: ArgumentHelp(
            "A header sent with every origin request, e.g. 'Authorization: Bearer …' (repeatable; the value is stored, never printed).",
            valueName: "Name: value"))
    var headerLines: [String] = []

    @Option(name: .customLong("pipeline-depth"), help: "Origin requests in flight per process, 1…128 (default 8).")
    var pipelineDepth: Int?

    @Option(name: .customLong("read-ahead"), help: "The largest sequential read-ahead window, 0…1GiB (default 4MiB).")
    var readAhead: ByteSize?

    @Option(
        name: .customLong("read-timeout"),
        help: ArgumentHelp(
            "How long a read waits for an origin that sends nothing before it fails (a mounted read: ETIMEDOUT), 0.1s…1h (default 30s).",
            valueName: "duration"))
    var readTimeout: Duration?

    /// `--read-timeout` as the engine takes it.
    var timeout: Swift.Duration? { readTimeout.map { .milliseconds(Int64(($0.seconds * 1000).rounded())) } }

    func validate() throws {
        _ = try parsedOrigin()
        _ = try parsedHeaders()
        try usage { () throws(CacheError) in
            try DomainInfo.validate(
                pipelineDepth: pipelineDepth, readAhead: readAhead?.bytes, readTimeout: timeout,
                headerCount: headerLines.count)
        }
    }

    /// The origin given, or nil when none is.
    func parsedOrigin() throws -> Origin? {
        guard let originURL else {
            if endpoint != nil || region != nil {
                throw ValidationError("--\(endpoint != nil ? "endpoint" : "region") needs --origin s3://BUCKET/PREFIX")
            }
            return nil
        }
        return try usage { () throws(CacheError) in try Origin(originURL, endpoint: endpoint, region: region) }
    }

    /// The headers given, or nil when no --header is.
    func parsedHeaders() throws -> [OriginHeader]? {
        guard !headerLines.isEmpty else { return nil }
        return try usage { () throws(CacheError) in
            try headerLines.map { line throws(CacheError) in try OriginHeader(parsing: line) }
        }
    }

    /// What `body` returns; its `invalidArgument` becomes a usage error with the same message.
    private func usage<T>(_ body: () throws(CacheError) -> T) throws -> T {
        do {
            return try body()
        } catch  where error.code == .invalidArgument {
            throw ValidationError(error.message)
        }
    }
}

extension DomainInfo {
    /// The domain object of CONTRACT §10: header names only, never their values.
    var json: JSON {
        .object([
            ("name", .string(name)), ("origin", origin.map { .string($0.url) } ?? .null),
            ("endpoint", origin?.endpoint.map { .string($0) } ?? .null),
            ("region", origin?.region.map { .string($0) } ?? .null),
            ("pipelineDepth", .int(Int64(pipelineDepth))), ("readAhead", .int(readAhead)),
            ("readTimeout", .double(readTimeout.seconds)),
            ("domainVersion", domainVersion.json),
            ("items", .int(Int64(items))), ("cachedBytes", .int(cachedBytes)),
            ("importFinished", .bool(importFinished)), ("importsFinished", .int(Int64(importsFinished))),
            (
                "changeHistory",
                .object([
                    ("changes", .int(Int64(clamping: changeHistory.changes))),
                    ("seconds", .double(changeHistory.seconds)),
                ])
            ),
            ("headers", .array(headerNames.map { .string($0) })),
        ])
    }

    /// One line: the name, where its items come from, its settings and what the store holds of it.
    var summary: String {
        let source =
            origin.map { origin in
                origin.url + (origin.endpoint.map { " at \($0)" } ?? "") + (origin.region.map { " (\($0))" } ?? "")
            } ?? "no origin"
        let headers = headerNames.isEmpty ? "" : ", headers \(headerNames.joined(separator: ", "))"
        return
            "\(name): \(source), pipeline depth \(pipelineDepth), read-ahead \(formatSize(readAhead)), read timeout \(Duration(argument: "\(readTimeout.seconds)s").map(\.description) ?? "?")\(headers); \(items) items, \(formatSize(cachedBytes)) cached; domain version \(domainVersion)"
    }
}
