import ArgumentParser
import ChunkCache
import Foundation

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
