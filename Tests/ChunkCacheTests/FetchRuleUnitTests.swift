import FileIO
import Foundation
import LMDBKit
import Testing

@testable import ChunkCache

/// Pure rules of the fetch path: version order (B6), confirmed misses (C2), NSError bridging (C1).
@Suite struct FetchRuleUnitTests {
    static func version(_ name: String, sequence: UInt64) -> VersionRecord {
        VersionRecord(
            contentVersion: Array(name.utf8), manifestID: sequence, size: 0, chunkShift: 16, sequence: sequence,
            createdAt: 0, root: ChunkDigest(bytes: [UInt8](repeating: 0, count: 32))!)
    }

    /// v3, v2, v1: newest first, as the catalogue lists them.
    static let versions = [version("v3", sequence: 3), version("v2", sequence: 2), version("v1", sequence: 1)]

    @Test("B6: the requested version first, then only newer ones, newest first; nil is the newest alone")
    func candidateOrder() {
        let order = { (requested: String?, strict: Bool) in
            let o = FetchPlanner.candidateOrder(
                of: Self.versions, requested: requested.map { Array($0.utf8) }, strict: strict)
            return ([o.first].compactMap { $0 } + Array(o.thenNewest)).map {
                String(decoding: Self.versions[$0].contentVersion, as: UTF8.self)
            }
        }
        #expect(order("v1", false) == ["v1", "v3", "v2"])
        #expect(order("v2", false) == ["v2", "v3"])
        #expect(order("v3", false) == ["v3"])
        #expect(order(nil, false) == ["v3"])
        #expect(order("gone", false) == ["v3", "v2", "v1"])
        #expect(order("v2", true) == ["v2"])
        #expect(order("gone", true) == [])
        #expect(FetchPlanner.candidateOrder(of: [], requested: nil, strict: false).first == nil)
    }

    @Test("C2: a store-authoritative miss is noSuchItem naming the item and domain")
    func missingItemOfStoreDomain() {
        let domain = DomainRecord(version: 1, createdAt: 0)
        #expect(MissingItem.authority(of: domain) == .store)
        let error = MissingItem.confirm("a/b", domain: "d", authority: .store)
        #expect(error.code == .noSuchItem)
        #expect(error.message.contains("\"a/b\"") && error.message.contains("\"d\""))
    }

    @Test("C2: no database or system error maps to noSuchItem")
    func faultsNeverNoSuchItem() {
        let lmdb: [LMDBError] = [
            .notFound, .keyExists, .mapFull, .databasesFull, .readersFull, .transactionFull, .mapResized,
            .corrupted, .pageNotFound, .invalid, .versionMismatch, .panic, .badTransaction, .noSpace,
            .ioError, .accessDenied, .noSuchFile, .readOnlyFilesystem,
        ]
        for error in lmdb {
            #expect(CacheError.wrap(error, store: "/s", doing: "fetching d/a").code != .noSuchItem, "\(error)")
        }
        for raw in 1...133 {
            #expect(
                CacheError.wrap(Errno(rawValue: Int32(raw)), store: "/s", doing: "fetching d/a").code != .noSuchItem,
                "errno \(raw)")
        }
        #expect(CacheError.wrap(CancellationError(), store: "/s", doing: "fetching d/a").code != .noSuchItem)
    }

    @Test(
        "C1: `as NSError` on any CacheError gives its code's domain and raw value and its message",
        arguments: CacheError.Code.allCases)
    func bridgesWithAsNSError(code: CacheError.Code) {
        let thrown: any Error = CacheError(code, "what went wrong with d/a")
        let bridged = thrown as NSError
        #expect(bridged.domain == code.domain)
        #expect(bridged.code == code.rawValue)
        #expect(bridged.localizedDescription == "what went wrong with d/a")
    }
}
