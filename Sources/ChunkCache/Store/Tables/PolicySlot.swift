import Foundation

/// A chunk of an origin version: its manifest and index. The unit the policy tracks and evicts.
struct PolicySlot: Hashable, Sendable {
    let manifestID: UInt64
    let index: Int64

    var key: [UInt8] { Keys.manifestPage(manifestID, page: index) }

    init(manifestID: UInt64, index: Int64) {
        self.manifestID = manifestID
        self.index = index
    }

    init?(key: UnsafeRawBufferPointer) {
        guard let (manifest, index) = Keys.parseManifestPage(key) else { return nil }
        self.init(manifestID: manifest, index: index)
    }
}
