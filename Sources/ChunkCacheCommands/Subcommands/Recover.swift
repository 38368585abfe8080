import ArgumentParser
import ChunkCache

struct Recover: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Salvage every record and chunk that can be read from a damaged store into a new store.",
        discussion: """
            Reads the store's data file page by page without LMDB (a damaged page loses only what it held) and writes \
            domains, items, versions and chunks (each re-hashed with SHA-256) into the new store --to, which verifies \
            clean. Downloaded chunks not settled yet are settled on the way: checked against their XXH3 and the SHA-256 their \
            manifest knew and stored as chunks. Nothing in the damaged store is written; stop the processes using it first. A version of a domain \
            without an origin that lost a chunk is left out (put its file again); one of an origin domain keeps the \
            chunk absent, downloaded again when fetched.
            """)

    @OptionGroup var global: GlobalOptions

    @Option(
        name: .long, help: ArgumentHelp("The new store's directory; it must not hold a store.", valueName: "newstore"))
    var to: String

    func run() async throws {
        let report = try await ChunkCache.recover(storeAt: global.store, into: to)
        func count(_ c: RecoveryReport.Count) -> JSON {
            .object([("recovered", .int(Int64(c.recovered))), ("lost", .int(Int64(c.lost)))])
        }
        func phrase(_ c: RecoveryReport.Count, _ what: String) -> String {
            "\(c.recovered) \(what) recovered, \(c.lost) lost"
        }
        global.emit(
            .object([
                ("path", .string(report.destination)),
                ("domains", count(report.domains)), ("items", count(report.items)),
                ("versions", count(report.versions)),
                ("chunks", count(report.chunks)),
                ("fills", count(report.fills)),
                ("versionsWithAbsentChunks", .int(Int64(report.versionsWithAbsentChunks))),
                ("readEarlierSnapshot", .bool(report.readEarlierSnapshot)),
                ("damage", .array(report.damage.map { .string($0) })),
            ]),
            summary: ([
                "recovered into \(report.destination): "
                    + [
                        phrase(report.domains, "domains"), phrase(report.items, "items"),
                        phrase(report.versions, "versions"),
                        phrase(report.chunks, "chunks"),
                        phrase(report.fills, "unsettled downloads (settled on the way)"),
                    ].joined(separator: "; ")
            ]
                + (report.versionsWithAbsentChunks > 0
                    ? [
                        "\(report.versionsWithAbsentChunks) versions of origin domains keep absent chunks, downloaded again when fetched"
                    ] : [])
                + (report.readEarlierSnapshot
                    ? ["the newest meta page was damaged: the previous commit's snapshot was read"] : [])
                + report.damage.map { "lost: \($0)" }).joined(separator: "\n"))
    }
}
