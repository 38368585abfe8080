import ChunkCache
import FileIO
import Foundation
import ZstdKit

/// The engine's decoders of bytes it did not write this moment, as fuzz targets (`scripts/fuzz.sh`,
/// `Fuzz/README.md`): records and manifest pages of a store that may be damaged, stored chunks, anchors and
/// page tokens a client hands back, `--header` lines, and the raw pages `recover` reads. Each returns what is
/// wrong with the result (an invariant the decoder must keep), or nil; a crash or hang is the fuzzer's to
/// catch.
///
/// Seals (XXH3) stop random bytes at the door, so each target also seals the bytes itself to reach the field
/// decoding behind the seal, as a damaged-but-resealed record or a forged token would.
enum EngineFuzzing {
    /// Every record type: what decodes encodes to bytes that decode to the same record.
    static func records(_ bytes: UnsafeRawBufferPointer) -> String? {
        let checks: [(UnsafeRawBufferPointer) -> String?] = [
            roundTrip(DomainRecord.self), roundTrip(ItemRecord.self), roundTrip(VersionRecord.self),
            roundTrip(ChunkRef.self),
            roundTrip(PendingRecord.self), roundTrip(ImportJobRecord.self), roundTrip(PolicyRecord.self),
            roundTrip(ChangeRecord.self), roundTrip(HotRecord.self),
        ]
        for check in checks { if let problem = check(bytes) { return problem } }
        // A read-ahead state another process left (unsealed: advice, range-checked instead).
        if var state = ReadAhead(stored: bytes) {
            guard state.stored == Array(bytes) else { return "a read-ahead state does not encode back to its bytes" }
            let end = ChunkLayout.maxItemLength
            // no overflow at the largest offsets
            _ = state.advance(fetching: (end - 65_536)..<end, size: end, limit: 1 << 30)
        }
        // The keys the store parses back: only what the writer could have written parses.
        if let (manifest, page) = Keys.parseManifestPage(bytes), Keys.manifestPage(manifest, page: page) != Array(bytes)
        {
            return "manifest page key \(Array(bytes)) does not print back to itself"
        }
        if let (_, itemKey, contentVersion) = Keys.parseVersion(bytes) {
            // The domain's bytes, not its String: invalid UTF-8 decodes to replacement characters.
            let domainLength = Int(bytes[0]) | Int(bytes[1]) << 8
            guard itemKey.count == 2 + domainLength + 16, itemKey.count + 2 + contentVersion.count <= bytes.count else {
                return "a version key's parts overrun it"
            }
        }
        if let (version, index) = Keys.parseChange(bytes, domainLength: min(bytes.count, 4)),
            Keys.change(domain: Array(bytes.prefix(4)), version: version, index: index) != Array(bytes)
        {
            return "change key \(Array(bytes)) does not print back to itself"
        }
        return nil
    }

    private static func roundTrip<R: StoreRecord>(_: R.Type) -> (UnsafeRawBufferPointer) -> String? {
        { bytes in
            var reader = ByteReader(bytes)
            guard let record = try? R(reading: &reader) else { return nil }
            let once = record.encoded()
            guard let again = once.withUnsafeBytes({ R(ifIntact: $0) }) else {
                return "\(R.self) decoded from these bytes does not decode once encoded"
            }
            return again.encoded() == once ? nil : "\(R.self) changes when encoded a second time"
        }
    }

    /// A manifest page: every entry with a known tag decodes, and a rewrite keeps the page's length and
    /// changes only what it was asked to.
    static func manifestPage(_ bytes: UnsafeRawBufferPointer) -> String? {
        _ = ManifestPage.entries(ofStored: bytes)  // unsealed: refused, without reading past the end
        var stored = Array(bytes)
        Seal.append(to: &stored)
        return stored.withUnsafeBytes { stored -> String? in
            guard let page = ManifestPage.entries(ofStored: stored) else {
                return "a page fails the seal just put on it"
            }
            var entries: [ManifestEntry] = []
            for slot in 0..<(page.count / ManifestPage.entrySize) {
                // an unknown tag: refused
                guard let entry = try? ManifestPage.entry(in: page, at: slot) else { return nil }
                entries.append(entry)
            }
            let evicted: (ManifestEntry) -> ManifestEntry? = {
                if case .stored(let digest) = $0 { .absent(digest) } else { nil }
            }
            let result: [UInt8]?
            do { result = try ManifestPage.rewrite(page, evicted) } catch {
                return "a page whose entries decode fails to rewrite"
            }
            guard let rewritten = result else {
                return entries.contains { if case .stored = $0 { true } else { false } }
                    ? "a page with stored entries was not rewritten" : nil
            }
            return rewritten.withUnsafeBytes { raw -> String? in
                guard let newPage = ManifestPage.entries(ofStored: raw) else {
                    return "a rewritten page fails its seal"
                }
                guard newPage.count == entries.count * ManifestPage.entrySize else {
                    return "a rewrite changed the number of entries"
                }
                for (slot, entry) in entries.enumerated() {
                    guard let now = try? ManifestPage.entry(in: newPage, at: slot), now == (evicted(entry) ?? entry)
                    else {
                        return "slot \(slot) of a rewritten page is not what the rewrite made it"
                    }
                }
                return nil
            }
        }
    }

    /// A stored chunk (first three bytes, big-endian: the length its manifest claims, at most 4 MiB): it
    /// decodes to exactly that many bytes, or is refused as corrupt; a hot one (§14) cooled decodes to the same.
    static func storedChunk(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard bytes.count >= 3 else { return nil }
        let rawCount = min(Int(bytes[0]) << 16 | Int(bytes[1]) << 8 | Int(bytes[2]), 4 << 20)
        let stored = UnsafeRawBufferPointer(rebasing: bytes[3...])
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(rawCount, 1), alignment: 16)
        defer { buffer.deallocate() }
        do {
            let decoded = try ChunkCodec.decode(
                stored, rawCount: rawCount, decompressor: Decompressor(), buffer: buffer, digest: unknownDigest,
                bases: NoBases())
            guard decoded.count == rawCount else {
                return "a chunk decoded to \(decoded.count) bytes, not the \(rawCount) its manifest claims"
            }
            return ChunkCodec.encoding(of: stored) == .hot ? cooledHot(stored, decoded) : nil
        } catch {
            return error.code == .corruptData ? nil : "a damaged chunk is \(error.code), not corruptData"
        }
    }

    private static let unknownDigest = ChunkDigest(bytes: [UInt8](repeating: 0, count: 32))!

    /// What is wrong with a hot chunk compressed again (as it cools): it must decode to the bytes it held.
    private static func cooledHot(_ stored: UnsafeRawBufferPointer, _ raw: UnsafeRawBufferPointer) -> String? {
        let cooled = ChunkCodec.cooled(Array(stored), rawCount: raw.count, compressor: Compressor(level: 3))
        guard cooled.withUnsafeBytes({ ChunkCodec.encoding(of: $0) }) != .hot else { return "a hot chunk did not cool" }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(raw.count, 1), alignment: 16)
        defer { buffer.deallocate() }
        let again = cooled.withUnsafeBytes {
            try? ChunkCodec.decodePlain(
                $0, rawCount: raw.count, decompressor: Decompressor(), buffer: buffer, digest: unknownDigest)
        }
        return again.map { $0.elementsEqual(raw) } == true ? nil : "a hot chunk cooled does not decode to its bytes"
    }

    /// Anchors and page tokens as a client hands them back: one that parses writes back to the same bytes, and
    /// none is longer than 500 bytes (F1).
    static func syncTokens(_ bytes: UnsafeRawBufferPointer) -> String? {
        let text = String(decoding: bytes, as: UTF8.self)
        var candidates: [Data] = []
        if let anchor = SyncAnchor(text) { candidates.append(anchor.rawValue) }
        // Past the seal, as a forged token would be.
        var sealed = Array(bytes.prefix(600))
        Seal.append(to: &sealed)
        candidates.append(Data(sealed))
        for raw in candidates {
            if let position = AnchorPosition(SyncAnchor(rawValue: raw)), position.anchor.rawValue != raw {
                return "an anchor does not write back to itself"
            }
            if let position = PagePosition(EnumerationPage(rawValue: raw)) {
                let page = position.page  // writing back traps past 500 bytes: the parse must refuse those
                guard page.rawValue == raw else { return "a page token does not write back to itself" }
            }
        }
        return nil
    }

    /// `--header 'Name: value'`: what parses has a token name and a value without CR, LF or NUL, and never
    /// shows the value.
    static func originHeader(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard let header = try? OriginHeader(parsing: String(decoding: bytes, as: UTF8.self)) else { return nil }
        guard !header.name.isEmpty, !header.value.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) else {
            return "header \(header.name) parsed with a control character"
        }
        return header.description == "\(header.name): <hidden>"
            ? nil : "a header's description shows more than its name"
    }

    /// The raw pages `recover` reads: any file either is refused or walks every tree to its end, recording what
    /// it skips.
    static func pageFile(_ bytes: UnsafeRawBufferPointer) -> String? {
        let path = (ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp") + "/chunkcache-fuzz-\(ThisProcess.id).mdb"
        defer { try? FileSystem.unlink(path) }
        guard let file = try? FileDescriptor.open(path, .writeOnly, options: [.create, .truncate]),
            (try? file.closeAfter({ try file.writeAll(bytes) })) != nil,
            let pages = try? PageFile(path: path)
        else { return nil }
        var problem: String?
        for name in Databases.names {
            guard let tree = pages.tree(named: name) else { continue }
            var previous: [UInt8]?
            var records = 0
            pages.walk(tree) { key, value in
                records += 1
                if let previous, !previous.lexicographicallyPrecedes(key) {
                    problem = "\(name): a walk went back from key \(previous) to \(Array(key))"
                } else if value.count > PageFile.maxValueSize || records > Int(pages.pageCount) * pages.pageSize / 8 {
                    problem = "\(name): more records or bytes than the file can hold"
                }
                previous = Array(key)
                return problem == nil
            }
            if problem != nil { break }
        }
        return problem
    }
}
