import Foundation
import LMDBKit

/// What the hot tier knows of one chunk (`hot` database, key `0x01` + digest).
package struct HotRecord: StoreRecord {
    var segment: HotSegment
    /// Its place in its segment's queue: larger is read more recently.
    var position: UInt64
    var frequency: UInt8
    /// The aging generation `frequency` was counted in.
    var generation: UInt32
    /// The chunk's raw length: what it adds to `hotBytes` while hot.
    var rawLength: UInt32

    package static let remedy = "nothing is lost: the hot tier forgets the chunk's reads"

    init(segment: HotSegment, frequency: UInt8, generation: UInt32, rawLength: UInt32) {
        self.segment = segment
        self.position = 0
        self.frequency = frequency
        self.generation = generation
        self.rawLength = rawLength
    }

    package func write(to w: inout ByteWriter) {
        w.append(segment.rawValue)
        w.append(position)
        w.append(frequency)
        w.append(generation)
        w.append(rawLength)
    }

    package init(reading r: inout ByteReader) throws(RecordDamage) {
        guard let segment = HotSegment(rawValue: try r.read(UInt8.self)) else {
            throw RecordDamage(problem: "names no segment")
        }
        self.segment = segment
        position = try r.read()
        frequency = try r.read()
        generation = try r.read()
        rawLength = try r.read()
    }

    /// The count aged to `generation`: halved once per generation since it was counted.
    func frequency(at generation: UInt32) -> UInt8 {
        let halvings = generation &- self.generation
        return halvings >= 8 ? 0 : frequency >> halvings
    }

    static func key(_ digest: ChunkDigest) -> [UInt8] { [0x01] + digest.bytes }

    static func queuePrefix(_ segment: HotSegment) -> [UInt8] { [0x02, segment.rawValue] }

    static func queueKey(_ segment: HotSegment, _ position: UInt64) -> [UInt8] {
        var w = ByteWriter(capacity: 10)
        w.append(UInt8(0x02))
        w.append(segment.rawValue)
        w.appendBigEndian(position)
        return w.bytes
    }
}
