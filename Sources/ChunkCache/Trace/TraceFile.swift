import Foundation

/// The JSON form of a domain's traces, which `trace export` writes and `trace import` reads
/// (<doc:Contract#15-Learned-prefetch>):
///
/// ```json
/// {"format": "chunkcache-traces", "version": 1, "domain": "pkgs", "origin": "http://host/base/",
///  "traces": [{"leader": "a/__init__.py", "runs": 2, "uses": 1,
///              "items": [{"item": "a/__init__.py", "extents": [[0, 4096]]}]}]}
/// ```
///
/// Items are named by their identifiers, which are the same in every store of the origin; `origin` is for
/// the reader and is not checked (one origin may be reached by different addresses).
struct TraceFile: Codable {
    static let formatName = "chunkcache-traces"

    struct Entry: Codable {
        var leader: String
        var runs: UInt32
        var uses: UInt32
        var items: [Member]
    }

    struct Member: Codable {
        var item: String
        /// `[offset, length]` pairs, in the order they were read.
        var extents: [[Int64]]
    }

    var format = Self.formatName
    var version = 1
    var domain: String
    var origin: String?
    var traces: [Entry]

    init(domain: String, origin: String?, traces: [TraceRecord]) {
        self.domain = domain
        self.origin = origin
        self.traces = traces.map { trace in
            Entry(
                leader: trace.leader, runs: trace.runs, uses: trace.uses,
                items: trace.members.map { member in
                    Member(item: member.item, extents: member.extents.map { [$0.offset, $0.length] })
                })
        }
    }

    func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }

    /// Reads a trace file.
    /// - Throws: `invalidArgument` saying why `data` is not one this version reads.
    static func decode(_ data: Data) throws(CacheError) -> TraceFile {
        let file: TraceFile
        do {
            file = try JSONDecoder().decode(TraceFile.self, from: data)
        } catch {
            throw CacheError(
                .invalidArgument, "this is not a trace file (\(error)); give a file `chunkcache trace export` wrote")
        }
        guard file.format == formatName, file.version == 1 else {
            throw CacheError(
                .invalidArgument,
                "this trace file is \(file.format) version \(file.version); this chunkcache reads \(formatName) version 1"
            )
        }
        return file
    }

    /// The file's traces as records, every identifier and extent checked.
    /// - Throws: `invalidArgument` naming the first trace at fault.
    func records() throws(CacheError) -> [TraceRecord] {
        let now = Date().timeIntervalSince1970
        return try traces.map { entry throws(CacheError) in
            try Records.validate(domain: domain, item: entry.leader)
            guard !entry.items.isEmpty, entry.items.count <= TraceRecord.maxMembers else {
                throw CacheError(
                    .invalidArgument,
                    "the trace of \(entry.leader) lists \(entry.items.count) items; a trace holds 1 to \(TraceRecord.maxMembers)"
                )
            }
            var members: [TraceRecord.Member] = []
            for member in entry.items {
                try Records.validate(domain: domain, item: member.item)
                var extents: [TraceExtent] = []
                for pair in member.extents {
                    guard pair.count == 2, pair[0] >= 0, pair[1] > 0, pair[1] <= Int64.max - pair[0] else {
                        throw CacheError(
                            .invalidArgument,
                            "the trace of \(entry.leader) gives \(member.item) the extent \(pair); an extent is [offset ≥ 0, length > 0]"
                        )
                    }
                    TraceExtents.note(TraceExtent(offset: pair[0], length: pair[1]), in: &extents)
                }
                members.append(TraceRecord.Member(item: member.item, extents: extents))
            }
            return TraceRecord(leader: entry.leader, members: members, runs: entry.runs, uses: entry.uses, usedAt: now)
        }
    }
}
