import CFuse3
import FileIO
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A directory entry for a `LOOKUP` or `READDIRPLUS`: the node, its attributes, and how long the kernel may
/// trust each.
public struct FuseEntry: Sendable {
    public var node: UInt64
    public var attributes: FuseAttributes
    /// Seconds the kernel may trust the name.
    public var timeout: Double
    /// Seconds the kernel may trust the attributes.
    public var attributeTimeout: Double

    public init(node: UInt64, attributes: FuseAttributes, timeout: Double, attributeTimeout: Double? = nil) {
        self.node = node
        self.attributes = attributes
        self.timeout = timeout
        self.attributeTimeout = attributeTimeout ?? timeout
    }

    /// libfuse's form of the entry. Nodes are never reused while the mount lives, so the generation is 1.
    var parameters: fuse_entry_param {
        var param = fuse_entry_param()
        param.ino = fuse_ino_t(node)
        param.generation = 1
        param.attr = attributes.status
        param.attr_timeout = attributeTimeout
        param.entry_timeout = timeout
        return param
    }
}
