ThisBuild / version := "4.4.1"
