/* A CUtensorMap, passed by value (__grid_constant__); encoded by the launcher (sp_tmaps). */
struct __align__(64) sp_tmap { unsigned long long v[16]; };

