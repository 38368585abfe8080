import Foundation
import LMDBKit

/// What the policy knows of one chunk (`policy` database).
package struct PolicyRecord: StoreRecord {
    var segment: PolicySegment
    /// Its place in its segment's queue: larger is more recent.
    var position: UInt64
    var frequency: UInt8
    /// The aging generation `frequency` was counted in.
    var generation: UInt32
    /// The chunk's stored bytes when it was downloaded: what evicting it frees when nothing else uses it.
    var storedBytes: UInt32
    /// The item the chunk belongs to (its `items` key): a pinned item's chunks are never evicted.
    var itemKey: [UInt8]

    package static let remedy = "nothing is lost: the policy forgets the chunk"

    package func write(to w: inout ByteWriter) {
        w.append(segment.rawValue)
        w.append(position)
        w.append(frequency)
        w.append(generation)
        w.append(storedBytes)
        w.appendPrefixed(itemKey)
    }

    package init(reading r: inout ByteReader) throws(RecordDamage) {
        guard let segment = PolicySegment(rawValue: try r.read(UInt8.self)) else {
            throw RecordDamage(problem: "names no segment")
        }
        self.segment = segment
        position = try r.read()
        frequency = try r.read()
        generation = try r.read()
        storedBytes = try r.read()
        itemKey = try r.readPrefixed()
    }

    init(
        segment: PolicySegment, position: UInt64, frequency: UInt8, generation: UInt32, storedBytes: UInt32,
        itemKey: [UInt8]
    ) {
        self.segment = segment
        self.position = position
        self.frequency = frequency
        self.generation = generation
        self.storedBytes = storedBytes
        self.itemKey = itemKey
    }

    /// The frequency aged to `generation`: halved once per generation since it was counted.
    func frequency(at generation: UInt32) -> UInt8 {
        let halvings = generation &- self.generation
        return halvings >= 8 ? 0 : frequency >> halvings
    }

    static func queueKey(_ segment: PolicySegment, _ position: UInt64) -> [UInt8] {
        var w = ByteWriter(capacity: 9)
        w.append(segment.rawValue)
        w.appendBigEndian(position)
        return w.bytes
    }
}
