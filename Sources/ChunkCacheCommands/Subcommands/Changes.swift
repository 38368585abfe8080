import ArgumentParser
import ChunkCache
import Foundation

/// `changes`: what changed since an anchor (CONTRACT §11).
struct Changes: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the changes of a domain since a sync anchor, in batches.")

    @OptionGroup var global: GlobalOptions
    @Option(help: "The domain.") var domain: String
    @Option(help: "The anchor of `anchor`, `ls` or the previous batch.") var since: String
    @Option(help: "Only the changes of root, workingSet, trash or a folder (default: every item).") var container:
        String?
    @Option(help: "Items per batch (default 200).") var batch: Int?
    @Flag(help: "Wait for a change when there is none yet.") var wait = false
    @Option(help: "With --wait, give up after this long (default 60s), printing an empty batch.") var timeout: Duration?

    func validate() throws {
        if let batch, batch < 1 { throw ValidationError("--batch \(batch) must be at least 1") }
        if timeout != nil && !wait { throw ValidationError("--timeout needs --wait") }
    }

    func run() async throws {
        let cache = try await global.openCache()
        let enumerator =
            if let container {
                try await cache.enumerator(for: ContainerName.identifier(container), in: domain)
            } else {
                try await cache.enumeratorOfAllItems(in: domain)
            }
        let anchor = SyncAnchor(since) ?? SyncAnchor(rawValue: Data())
        if wait {
            _ = try await enumerator.waitForChanges(
                after: anchor, timeout: .milliseconds(Int64((timeout?.seconds ?? 60) * 1000)))
        }
        let result = try await enumerator.enumerateChanges(from: anchor, suggestedBatchSize: batch)
        global.emit(
            .object([
                ("updated", .array(result.updated.map(\.catalogueJSON))),
                ("deleted", .array(result.deleted.map { .string($0) })),
                ("nextAnchor", .string(result.nextAnchor.description)),
                ("moreComing", .bool(result.moreComing)),
                ("domainVersion", result.domainVersion.json),
            ]),
            summary: (result.updated.map { "updated " + $0.listingLine } + result.deleted.map { "deleted \($0)" }
                + ["next anchor \(result.nextAnchor)\(result.moreComing ? " (more coming)" : "")"]).joined(
                    separator: "\n"))
    }
}
