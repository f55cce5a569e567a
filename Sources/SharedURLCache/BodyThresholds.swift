/// The body sizes at which the cache changes how it handles a body, in one place so that the
/// lookup and the store path cannot drift apart.
enum BodyThresholds {
    /// Bodies up to this size are held whole: a lookup reads them whole (and the memory tier
    /// keeps them), and a streamed store keeps a copy while it writes, so that the memory tier
    /// gets the entry it just stored. Larger bodies are streamed from the store and never held
    /// whole. One value for both, or the tier would keep bodies that lookups stream or miss
    /// bodies that lookups read whole. 256 KiB bounds what one answer holds in memory (a proxy
    /// reads such a body before it answers) while a default 4 MiB memory tier still keeps 16 of
    /// them; most API responses are far smaller.
    static let wholeBodyBytes = 256 << 10

    /// Compressed bodies above this size are sent as their stored stream when the flow's
    /// compressed passthrough is on and the client accepts it; smaller ones inflate in less
    /// time than the extra framing costs.
    static let passthroughMinimumBytes = 8 << 10
}
