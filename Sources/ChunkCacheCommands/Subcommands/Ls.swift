import ArgumentParser
import ChunkCache
import Foundation

/// `ls`: a container's items, a page at a time (CONTRACT §11).
struct Ls: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List a container's items a page at a time: root (default), workingSet, trash or a folder.")

    @OptionGroup var global: GlobalOptions
    @Option(help: "The domain.") var domain: String
    @Argument(help: "root, workingSet, trash, or a folder's identifier.") var container = "root"
    @Option(name: .customLong("page-size"), help: "Items per page (default 200).") var pageSize: Int?
    @Option(help: "The nextPage token of the previous page; omit for the first.") var page: String?
    @Option(help: "name or date (newest first); only for a first page, later pages keep their listing's order.")
    var sort: ListingOrder = .name

    func validate() throws {
        if let pageSize, pageSize < 1 { throw ValidationError("--page-size \(pageSize) must be at least 1") }
    }

    func run() async throws {
        let cache = try await global.openCache()
        let enumerator = try await cache.enumerator(for: ContainerName.identifier(container), in: domain)
        let start: EnumerationPage
        if let page {
            // An unparsable token is the engine's to refuse, as pageExpired (F7), not a usage error.
            start = EnumerationPage(page) ?? EnumerationPage(rawValue: Data([0]))
        } else {
            start = sort == .name ? .initialPageSortedByName : .initialPageSortedByDate
        }
        let result = try await enumerator.enumerateItems(startingAt: start, suggestedPageSize: pageSize)
        global.emit(
            .object([
                ("items", .array(result.items.map(\.catalogueJSON))),
                ("nextPage", result.nextPage.map { .string($0.description) } ?? .null),
                ("syncAnchor", .string(result.syncAnchor.description)),
                ("domainVersion", result.domainVersion.json),
            ]),
            summary: (result.items.map(\.listingLine) + (result.nextPage.map { ["… more: --page \($0)"] } ?? []))
                .joined(separator: "\n"))
    }
}

enum ListingOrder: String, ExpressibleByArgument {
    case name, date
}
