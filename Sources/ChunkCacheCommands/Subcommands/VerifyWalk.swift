import ArgumentParser
import ChunkCache
import Foundation

/// The walk of `verify`, run by `verify` in a child process: it prints a JSON line naming each database and key
/// before checking it, then one line with the report (or the error), so a crash of this process names its place.
struct VerifyWalk: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify-walk", abstract: "The walk of `verify`, in the child process `verify` runs.",
        shouldDisplay: false)

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Remove corrupt chunks and fills.")
    var repair = false

    func run() async throws {
        ChildProcess.line(.object([("walking", .string("opening the store"))]))
        do {
            let cache = try await global.openCache()
            let report = try await cache.verify(repair: repair) { database, key in
                ChildProcess.line(.object([("walking", .string(database)), ("key", .string(hexString(key)))]))
            }
            ChildProcess.line(
                .object([("report", .string(Self.json(report).rendered)), ("summary", .string(Self.summary(report)))]))
        } catch let error as CacheError {
            ChildProcess.line(
                .object([("error", .object([("code", .string(error.code.name)), ("message", .string(error.message))]))])
            )
        }
    }

    static func json(_ report: VerifyReport) -> JSON {
        .object([
            ("chunksChecked", .int(Int64(report.chunksChecked))),
            ("corrupt", .array(report.corrupt.map { .string($0.description) })),
            ("repaired", .int(Int64(report.repaired))),
            (
                "damagedVersions",
                .array(
                    report.damagedVersions.map { version in
                        .object([
                            ("domain", .string(version.domain)), ("item", version.item.map { .string($0) } ?? .null),
                            ("contentVersion", .string(version.contentVersion)), ("problem", .string(version.problem)),
                        ])
                    })
            ),
            ("damagedRecords", .array(report.damagedRecords.map { .string($0) })),
            ("inconsistencies", .array(report.inconsistencies.map { .string($0) })),
            ("fillsChecked", .int(Int64(report.fillsChecked))),
            ("corruptFills", .array(report.corruptFills.map { .string($0) })),
        ])
    }

    static func summary(_ report: VerifyReport) -> String {
        ([
            "\(report.chunksChecked) chunks checked, \(report.corrupt.count) corrupt, "
                + "\(report.fillsChecked) fills checked, \(report.corruptFills.count) corrupt, \(report.repaired) repaired, "
                + "\(report.damagedVersions.count) damaged versions, \(report.damagedRecords.count) damaged records, "
                + "\(report.inconsistencies.count) inconsistencies"
        ]
            + report.corrupt.map { "corrupt: \($0)" }
            + report.corruptFills.map { "corrupt: \($0)" }
            + report.damagedVersions.map {
                "damaged: version \"\($0.contentVersion)\" of item \"\($0.item ?? "?")\" in domain \"\($0.domain)\": \($0.problem)"
            }
            + report.damagedRecords.map { "damaged record: \($0)" }
            + report.inconsistencies.map { "inconsistent: \($0)" }).joined(separator: "\n")
    }
}
