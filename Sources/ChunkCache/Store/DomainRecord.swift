/// A domain: its version counter, who may not materialize its files, and its origin settings
/// (<doc:Contract#10-Origins-the-cold-path>).
///
/// The origin settings were appended after `nonMaterializingProcesses`; a record that ends before them is a
/// domain without an origin, with the default settings.
package struct DomainRecord: StoreRecord {
    var version: UInt64
    var createdAt: Double
    /// Processes whose fetches get `noPermission` (exact, case-sensitive names).
    var nonMaterializingProcesses: [String] = []
    /// The authoritative remote copy of the domain's items; nil when the store is the only copy.
    var origin: Origin?
    /// Sent with every origin request. The values are credentials: stored here, never printed.
    var headers: [OriginHeader] = []
    var pipelineDepth = DomainInfo.defaultPipelineDepth
    var readAhead = DomainInfo.defaultReadAhead
    /// Tells this domain from an earlier one of the same name: anchors and page tokens carry it, so one of a
    /// removed domain is `syncAnchorExpired` in the next
    /// (<doc:Contract#11-Catalogue,-enumeration,-changes-and-the-working-set>). Random for a new domain; a record
    /// written before the change log reads its creation time here.
    var epoch = UInt64.random(in: 1...UInt64.max)
    /// Change records of versions up to this one are compacted away: an anchor before it has expired.
    var compactedThrough: UInt64 = 0
    /// Change records the log holds.
    var retainedChanges: UInt64 = 0
    /// How much history the change log keeps: records beyond either bound are compacted.
    var history = ChangeHistory.standard
    /// Recent items used before this time have already left the working set (``RecentItems``).
    var recentCheckedThrough: Double = 0
    /// The latest import or reimport of the domain (0: none), and the latest that finished (<doc:Contract#8-Import>).
    var importEpoch: UInt64 = 0
    var importFinishedEpoch: UInt64 = 0
    /// How many times an import's end was recorded: once per epoch (<doc:FileProviderRules#G4>).
    var importsFinished: UInt64 = 0
    /// How long an origin request may send nothing before it fails `serverUnreachable` (`--read-timeout`),
    /// in seconds; nil: <doc:Contract#10-Origins-the-cold-path>'s idle timeout (``DomainInfo/defaultReadTimeout``).
    var readTimeout: Double?

    package static let remedy = "run `chunkcache verify` to list the damage; put the domain's files into a new domain"

    package func write(to w: inout ByteWriter) {
        w.append(version)
        w.append(createdAt)
        w.append(UInt16(nonMaterializingProcesses.count))
        for name in nonMaterializingProcesses { w.appendPrefixed(name) }
        w.append(UInt8(origin == nil ? 0 : 1))
        if let origin {
            w.appendPrefixed(origin.url)
            w.appendPrefixed(origin.endpoint ?? "")
            w.appendPrefixed(origin.region ?? "")
        }
        w.append(UInt16(headers.count))
        for header in headers {
            w.appendPrefixed(header.name)
            w.appendPrefixed(header.value)
        }
        w.append(UInt32(pipelineDepth))
        w.append(UInt64(readAhead))
        w.append(epoch)
        w.append(compactedThrough)
        w.append(retainedChanges)
        w.append(history.changes)
        w.append(history.seconds)
        w.append(recentCheckedThrough)
        w.append(importEpoch)
        w.append(importFinishedEpoch)
        w.append(importsFinished)
        w.append(readTimeout ?? 0)
    }
}

extension DomainRecord {
    package init(reading r: inout ByteReader) throws(RecordDamage) {
        version = try r.read()
        createdAt = try r.readDouble()
        var names: [String] = []
        for _ in 0..<(try r.read(UInt16.self)) { names.append(try r.readPrefixedString()) }
        nonMaterializingProcesses = names
        guard r.offset < r.buffer.count else { return }  // written before the origin settings were appended
        if try r.read(UInt8.self) == 1 {
            let url = try r.readPrefixedString()
            let endpoint = try r.readPrefixedString()
            let region = try r.readPrefixedString()
            // The settings were checked when they were stored; a record that fails the same check is damaged.
            guard
                let origin = try? Origin(
                    url, endpoint: endpoint.isEmpty ? nil : endpoint, region: region.isEmpty ? nil : region),
                origin.url == url
            else {
                throw RecordDamage(problem: "has an origin that is not a valid URL")
            }
            self.origin = origin
        }
        var headers: [OriginHeader] = []
        for _ in 0..<(try r.read(UInt16.self)) {
            let name = try r.readPrefixedString()
            let value = try r.readPrefixedString()
            guard let header = try? OriginHeader(name: name, value: value) else {
                throw RecordDamage(problem: "has a malformed header")
            }
            headers.append(header)
        }
        self.headers = headers
        let depth = try r.read(UInt32.self)
        let readAhead = try r.read(UInt64.self)
        guard DomainInfo.pipelineDepthRange.contains(Int(depth)),
            readAhead <= UInt64(DomainInfo.readAheadRange.upperBound)
        else {
            throw RecordDamage(problem: "has an impossible pipeline depth or read-ahead")
        }
        pipelineDepth = Int(depth)
        self.readAhead = Int64(readAhead)
        // Written before the change log: the epoch follows from the creation time, so it never changes.
        guard r.offset < r.buffer.count else {
            epoch = createdAt.bitPattern
            return
        }
        epoch = try r.read()
        compactedThrough = try r.read()
        retainedChanges = try r.read()
        history = ChangeHistory(changes: try r.read(), seconds: try r.readDouble())
        recentCheckedThrough = try r.readDouble()
        guard r.offset < r.buffer.count else { return }  // written before resumable imports
        importEpoch = try r.read()
        importFinishedEpoch = try r.read()
        importsFinished = try r.read()
        guard r.offset < r.buffer.count else { return }  // written before the read timeout was a setting
        let timeout = try r.readDouble()
        guard timeout == 0 || DomainInfo.readTimeoutRange.contains(timeout) else {
            throw RecordDamage(problem: "has an impossible read timeout")
        }
        readTimeout = timeout == 0 ? nil : timeout
    }
}
