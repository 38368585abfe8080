/// Settings fixed when a store is created.
public struct StoreSettings: Sendable, Hashable {
    /// The chunk size.
    public var layout: ChunkLayout
    /// The most disk the store's files may take together (`init --max-size`, <doc:Contract#12-A-bounded-cache>):
    /// `data.mdb`, whose LMDB map is this less room for the others, `lock.mdb` and the space reserve; hand-offs in
    /// `tmp/` aside.
    public var maxSize: Int64
    /// The zstd level for new chunks (1…19).
    public var compressionLevel: Int32

    /// 64 KiB chunks, a 1 TiB bound (address space only: the file grows as needed), zstd level 3.
    public static let standard = StoreSettings(layout: .standard, maxSize: 1 << 40, compressionLevel: 3)

    public init(layout: ChunkLayout, maxSize: Int64, compressionLevel: Int32 = 3) {
        self.layout = layout
        self.maxSize = maxSize
        self.compressionLevel = compressionLevel
    }
}
