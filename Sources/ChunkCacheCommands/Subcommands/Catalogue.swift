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

/// `anchor`: the domain's current sync anchor.
struct Anchor: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print a domain's current sync anchor and version.")

    @OptionGroup var global: GlobalOptions
    @Option(help: "The domain.") var domain: String

    func run() async throws {
        let cache = try await global.openCache()
        let enumerator = try await cache.enumeratorOfAllItems(in: domain)
        let anchor = try await enumerator.currentSyncAnchor()
        let version = try cache.domainVersion(of: domain)
        global.emit(
            .object([("syncAnchor", .string(anchor.description)), ("domainVersion", version.json)]),
            summary: "\(anchor) (domain version \(version))")
    }
}

/// `mark`: an item's favorite rank, tag, shared flag, last use.
struct Mark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Set or clear an item's favorite rank, tag and shared flag, or mark it used.")

    @OptionGroup var global: GlobalOptions
    @Option(help: "The domain.") var domain: String
    @Argument(help: "The item identifier.") var item: String
    @Option(help: "Make it a favorite with this rank.") var favorite: UInt64?
    @Flag(name: .customLong("no-favorite"), help: "No longer a favorite.") var noFavorite = false
    @Option(help: "Tag it with these bytes, in hex.") var tag: String?
    @Flag(name: .customLong("no-tag"), help: "Remove its tag.") var noTag = false
    @Flag(inversion: .prefixedNo, help: "Shared or not.") var shared: Bool?
    @Flag(help: "Set its last-use date to now.") var used = false

    func validate() throws {
        if favorite != nil && noFavorite { throw ValidationError("give --favorite or --no-favorite, not both") }
        if tag != nil && noTag { throw ValidationError("give --tag or --no-tag, not both") }
        if let tag, Self.bytes(hex: tag) == nil {
            throw ValidationError("--tag \(tag.prefix(64)) is not hex digits in pairs; give e.g. --tag 0a1b")
        }
    }

    func run() async throws {
        let cache = try await global.openCache()
        var edit = MetadataEdit(isShared: shared, markUsed: used)
        if let favorite { edit.favoriteRank = .set(favorite) } else if noFavorite { edit.favoriteRank = .remove }
        if let tag, let bytes = Self.bytes(hex: tag) {
            edit.tagData = .set(Data(bytes))
        } else if noTag {
            edit.tagData = .remove
        }
        let change = try await cache.setMetadata(
            edit, of: ItemIdentifier(domain: domain, ContainerName.identifier(item)))
        global.emit(change.json, summary: change.summary)
    }

    static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        for i in stride(from: 0, to: digits.count, by: 2) {
            guard let high = hexDigit(digits[i]), let low = hexDigit(digits[i + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    private static func hexDigit(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

/// `rm`: trash an item, or delete it for good.
struct Rm: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Move an item to the trash, or delete it (a folder with its contents) for good.")

    @OptionGroup var global: GlobalOptions
    @Option(help: "The domain.") var domain: String
    @Argument(help: "The item identifier.") var item: String
    @Flag(help: "Delete it and its versions for good instead of trashing it.") var permanently = false

    func run() async throws {
        let cache = try await global.openCache()
        let id = ItemIdentifier(domain: domain, ContainerName.identifier(item))
        let change = permanently ? try await cache.deleteItem(id) : try await cache.trashItem(id)
        global.emit(change.json, summary: change.summary)
    }
}

/// `mv`: move or rename an item.
struct Mv: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Move an item to another folder (root, trash, or a folder), renaming it with --name.")

    @OptionGroup var global: GlobalOptions
    @Option(help: "The domain.") var domain: String
    @Argument(help: "The item identifier.") var item: String
    @Option(help: "root, trash, or a folder's identifier.") var to: String
    @Option(help: "Its new filename.") var name: String?

    func run() async throws {
        let cache = try await global.openCache()
        let change = try await cache.moveItem(
            ItemIdentifier(domain: domain, ContainerName.identifier(item)), to: ContainerName.identifier(to),
            renamingTo: name)
        global.emit(change.json, summary: change.summary)
    }
}

/// The CLI's short names of the containers.
enum ContainerName {
    /// `root`, `workingSet` and `trash` name the containers wherever the CLI takes an item or a container
    /// (an item whose identifier is one of these words is not reachable by it there); anything else is an
    /// item identifier.
    static func identifier(_ name: String) -> String {
        switch name {
        case "root": return Item.rootContainer
        case "workingSet": return Item.workingSetContainer
        case "trash": return Item.trashContainer
        default: return name
        }
    }
}

extension ItemChange {
    var json: JSON {
        var pairs: [(String, JSON)] = [
            ("item", item.catalogueJSON), ("domainVersion", domainVersion.json), ("changed", .bool(changed)),
        ]
        if !deleted.isEmpty { pairs.append(("deleted", .array(deleted.map { .string($0) }))) }
        return .object(pairs)
    }

    var summary: String {
        let what =
            !deleted.isEmpty
            ? "deleted \(deleted.count) item\(deleted.count == 1 ? "" : "s")" : changed ? "changed" : "unchanged"
        return "\(item.listingLine): \(what) (domain version \(domainVersion))"
    }
}

extension Item {
    /// The item object of CONTRACT §11: §7's plus the File Provider metadata, `null` where absent.
    var catalogueJSON: JSON {
        guard case .object(var pairs) = json else { return json }
        let formatter = Self.dateFormatter
        pairs += [
            ("parent", .string(parentItemIdentifier)), ("filename", .string(filename)),
            ("contentType", .string(String(describing: contentType))),
            ("creationDate", .string(formatter.string(from: creationDate))),
            ("contentModificationDate", .string(formatter.string(from: contentModificationDate))),
            ("lastUsedDate", lastUsedDate.map { .string(formatter.string(from: $0)) } ?? .null),
            ("tagData", tagData.map { .string($0.map { String(format: "%02x", $0) }.joined()) } ?? .null),
            ("favoriteRank", favoriteRank.map { .int(Int64(clamping: $0)) } ?? .null),
            ("isShared", .bool(isShared)), ("isTrashed", .bool(isTrashed)),
        ]
        if let symlinkTarget { pairs.append(("symlinkTarget", .string(symlinkTarget))) }
        return .object(pairs)
    }

    /// ISO 8601 with milliseconds; made once, not per item of a page (a formatter costs more than the item).
    nonisolated(unsafe) private static let dateFormatter: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }()

    /// One line of `ls`: type, size, name, identifier.
    var listingLine: String {
        let type = kind == .folder ? "d" : kind == .symlink ? "l" : "-"
        let flags =
            (isTrashed ? "T" : "") + (isShared ? "S" : "") + (favoriteRank != nil ? "F" : "")
            + (tagData != nil ? "#" : "")
        return
            "\(type) \(formatSize(documentSize).padding(toLength: 10, withPad: " ", startingAt: 0)) \(filename)  [\(identifier)] \(flags)"
    }
}
