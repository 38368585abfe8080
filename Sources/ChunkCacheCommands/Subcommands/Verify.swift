import ArgumentParser
import ChunkCache

struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Re-hash every chunk, check every manifest, and recount references and counters.",
        discussion: "Exits 0 with its report whether or not it finds corruption. --repair removes corrupt chunks and marks the manifest entries that used them absent.")

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Remove corrupt chunks.")
    var repair = false

    func run() async throws {
        let cache = try await global.openCache()
        let report = try await cache.verify(repair: repair)
        global.emit(
            .object([
                ("chunksChecked", .int(Int64(report.chunksChecked))),
                ("corrupt", .array(report.corrupt.map { .string($0.description) })),
                ("repaired", .int(Int64(report.repaired))),
                ("damagedVersions", .array(report.damagedVersions.map { version in
                    .object([
                        ("domain", .string(version.domain)), ("item", version.item.map { .string($0) } ?? .null),
                        ("contentVersion", .string(version.contentVersion)), ("problem", .string(version.problem)),
                    ])
                })),
                ("damagedRecords", .array(report.damagedRecords.map { .string($0) })),
                ("inconsistencies", .array(report.inconsistencies.map { .string($0) })),
            ]),
            summary: (["\(report.chunksChecked) chunks checked, \(report.corrupt.count) corrupt, \(report.repaired) repaired, "
                       + "\(report.damagedVersions.count) damaged versions, \(report.damagedRecords.count) damaged records, "
                       + "\(report.inconsistencies.count) inconsistencies"]
                + report.corrupt.map { "corrupt: \($0)" }
                + report.damagedVersions.map { "damaged: version \"\($0.contentVersion)\" of item \"\($0.item ?? "?")\" in domain \"\($0.domain)\": \($0.problem)" }
                + report.damagedRecords.map { "damaged record: \($0)" }
                + report.inconsistencies.map { "inconsistent: \($0)" }).joined(separator: "\n"))
    }
}
