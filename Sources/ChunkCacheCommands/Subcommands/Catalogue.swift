import ArgumentParser
import ChunkCache
import Foundation

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
